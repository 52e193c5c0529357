package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManPages: ferry man writes a page per listed command, made of that
// command's own help, and troff reads every page without a warning.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	ok(t, "man", "-dir", dir)
	for name, c := range commands {
		page := filepath.Join(dir, "ferry-"+name+".1")
		data, err := os.ReadFile(page)
		if c.hidden {
			if err == nil {
				t.Errorf("a page for the hidden command %s", name)
			}
			continue
		}
		if err != nil {
			t.Errorf("no page for %s: %v", name, err)
			continue
		}
		if !strings.Contains(string(data), ".SH DESCRIPTION\n.nf\nusage: ferry "+roffEscape(name)) {
			t.Errorf("%s: the page does not carry the command's help:\n%.300s", page, data)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Log("no groff: pages not checked by troff")
		return
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	for _, p := range pages {
		out, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", p).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("groff %s: %v\n%s", filepath.Base(p), err, out)
		}
	}
}
