package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProgressTreePTY copies a tree with ferry cp -r while stderr is a
// terminal: without -vb the live display still runs and its last frame
// counts every file; with -q nothing is drawn.
func TestProgressTreePTY(t *testing.T) {
	srv := startFerrySrv(t)
	tree := filepath.Join(t.TempDir(), "tree")
	const files = 12
	for i := range files {
		name := filepath.Join(tree, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%02d", i))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, bytes.Repeat([]byte{byte(i)}, 1000+i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, quiet := range []bool{false, true} {
		p := openPTY(t)
		args := []string{"cp", "-r", tree + "/", srv.url + fmt.Sprintf("/up-%v/", quiet)}
		if quiet {
			args = append([]string{"cp", "-q"}, args[1:]...)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		code := runMain(ctx, &env{stdin: bytes.NewReader(nil), stdout: p.slave, stderr: p.slave}, args)
		cancel()
		if code != 0 {
			t.Fatalf("quiet %v: exit %d; output %q", quiet, code, p.output())
		}
		out := p.output()
		if quiet {
			if strings.Contains(out, "files]") {
				t.Errorf("-q drew a display: %q", out)
			}
			continue
		}
		p.expect(t, 0, fmt.Sprintf("[%d/%d files]", files, files))
		if strings.Contains(out, "stream  0") {
			t.Errorf("stream lines without -vb: %q", out)
		}
	}
}
