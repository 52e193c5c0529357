package web

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestSymlinkSwapMidJob is the attack review's symlink race: a job
// checks its files when it is made, and its second file (or the
// destination directory) becomes a symbolic link out of the root while
// the first one copies. The engine opens every local file through the
// root, so the swapped file is refused; nothing outside is read or
// written, and a retry checks again.
func TestSymlinkSwapMidJob(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	f.slow.Store(false)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.txt"), []byte("outside secret\n"))
	c := ta.client(t)
	c.login("alice")
	src := c.open(f.url + "/")
	loc := c.open("file://" + ta.root)
	swap := func(i int, do func()) {
		ta.app.beforeItem = func(k int) {
			if k == i {
				do()
			}
		}
	}
	symlink := func(old, new string) {
		if err := os.Symlink(old, new); err != nil {
			t.Error(err)
		}
	}

	// Read: root/d/f.txt becomes a link to the secret before it is
	// uploaded.
	writeFile(t, filepath.Join(ta.root, "d", "a_big"), randomData(1<<20))
	writeFile(t, filepath.Join(ta.root, "d", "f.txt"), []byte("harmless\n"))
	c.must("POST", "/api/mkdir", fileOpRequest{EP: src.ID, Dir: "/", Name: "exfil"}, nil)
	swap(1, func() {
		os.Remove(filepath.Join(ta.root, "d", "f.txt"))
		symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ta.root, "d", "f.txt"))
	})
	var j job
	c.must("POST", "/api/jobs", copyRequest{Src: loc.ID, SrcDir: filepath.Join(ta.root, "d"), Names: []string{"a_big", "f.txt"}, Dst: src.ID, DstDir: "/exfil"}, &j)
	if j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled); j.State != stateFailed || j.Done != 1 {
		t.Errorf("read job: %+v, want failed after one file", j)
	}
	if b, err := os.ReadFile(filepath.Join(f.dir, "exfil", "f.txt")); err == nil {
		t.Errorf("the server got %q from outside the root", b)
	}
	if code, msg := c.do("POST", "/api/jobs/"+j.ID+"/retry", nil, nil); code != http.StatusForbidden {
		t.Errorf("retry of the read job: %d %s, want 403", code, msg)
	}

	// Write: root/in becomes a link to a directory outside while the
	// first file downloads.
	writeFile(t, filepath.Join(f.dir, "w", "a_big"), randomData(1<<20))
	writeFile(t, filepath.Join(f.dir, "w", "payload"), []byte("written-by-alice\n"))
	in := filepath.Join(ta.root, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	swap(1, func() {
		if err := os.Rename(in, in+".old"); err != nil {
			t.Error(err)
		}
		symlink(outside, in)
	})
	c.must("POST", "/api/jobs", copyRequest{Src: src.ID, SrcDir: "/w", Names: []string{"a_big", "payload"}, Dst: loc.ID, DstDir: in}, &j)
	if j = c.waitJob(j.ID, stateDone, stateFailed, stateCancelled); j.State != stateFailed || j.Done != 1 {
		t.Errorf("write job: %+v, want failed after one file", j)
	}
	ta.app.beforeItem = nil
	if code, msg := c.do("POST", "/api/jobs/"+j.ID+"/retry", nil, nil); code != http.StatusForbidden {
		t.Errorf("retry of the write job: %d %s, want 403", code, msg)
	}
	es, _ := os.ReadDir(outside)
	if len(es) != 1 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("outside the root now holds %q", names)
	}
}
