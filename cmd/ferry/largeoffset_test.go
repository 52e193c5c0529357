package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// largeOffset is past 4 GiB by an odd amount, so that a 32-bit offset
// anywhere on the way (REST, ERET/ESTO, MODE E headers, WriteAt) lands
// elsewhere.
const largeOffset = 4<<30 + 12345

// writeSparse makes a sparse file of largeOffset+len(data) bytes, data at
// largeOffset and zeros before (holes, costing no disk).
func writeSparse(t *testing.T, name string, data []byte) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, largeOffset); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, 0o666); err != nil {
		t.Fatal(err)
	}
}

// checkAt checks that name holds want at largeOffset and ends there.
func checkAt(t *testing.T, name string, want []byte) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, largeOffset); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: the data at offset %d differs", name, largeOffset)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != largeOffset+int64(len(want)) {
		t.Errorf("%s: size %v, want %d", name, fi.Size(), largeOffset+int64(len(want)))
	}
}

// TestLargeOffsets moves a range past 4 GiB of sparse files down and up,
// in stream mode and MODE E, against Ferry's server and GCT's. A whole
// file of more than 4 GiB through ferry shell took 16 s each way under
// -race on the shared 2-core test machine, too slow for the suite (the
// interop tests move 4100 MiB with the built binary); the ranges check
// the same 64-bit offsets in a fraction of a second.
func TestLargeOffsets(t *testing.T) {
	for _, srvName := range []string{"ferry", "gct"} {
		t.Run(srvName, func(t *testing.T) {
			var dir, url string
			if srvName == "gct" {
				s := startGCT(t)
				dir, url = s.dir, s.url
			} else {
				s := startFerrySrv(t)
				dir, url = s.dir, s.url
			}
			for _, p := range []string{"1", "4"} {
				data := randomData(t, 300_000)
				off, n := strconv.Itoa(largeOffset), strconv.Itoa(len(data))
				writeSparse(t, filepath.Join(dir, "big"+p), data)
				local := t.TempDir()
				down := filepath.Join(local, "down")
				if r := ferry(t, nil, "cp", "-p", p, "-off", off, "-len", n, url+"/big"+p, down); r.code != 0 {
					t.Fatalf("-p %s download: exit %d, %s", p, r.code, r.stderr)
				}
				checkAt(t, down, data)

				up := filepath.Join(local, "up")
				writeSparse(t, up, data)
				name := fmt.Sprintf("up%s", p)
				if r := ferry(t, nil, "cp", "-p", p, "-off", off, "-len", n, up, url+"/"+name); r.code != 0 {
					t.Fatalf("-p %s upload: exit %d, %s", p, r.code, r.stderr)
				}
				checkAt(t, filepath.Join(dir, name), data)
			}
		})
	}
}
