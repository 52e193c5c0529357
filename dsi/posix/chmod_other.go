//go:build !linux

package posix

import "io/fs"

// chmod is Chmod of the entry r, by name: its hard links are checked on
// a stat of the name.
func (fsys *FS) chmod(name, r string, mode fs.FileMode) error {
	fi, err := fsys.root.Stat(r)
	if err != nil {
		return mapErr("chmod", name, err)
	}
	if err := refuseLinked("chmod", name, fi); err != nil {
		return err
	}
	return mapErr("chmod", name, fsys.root.Chmod(r, mode))
}
