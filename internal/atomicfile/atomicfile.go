// Package atomicfile replaces small files so that a reader never sees
// half of one: the resume state of transfers and the shell's history.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces the file name with data (mode 0600) through a temporary
// file beside it, synced before the rename.
func Write(name string, data []byte) error {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
