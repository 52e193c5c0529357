package pi_test

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ferrygrid/ferry/dsi/posix"
)

// TestListSpecialFiles: a FIFO and a socket are listed with their OS
// types (RFC 3659 §7.5.1), never as files: MLST, MLSD, and LIST's mode
// string.
func TestListSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := posix.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, serve(t, config(st)))
	c.login()
	if r := c.expect("MLST /fifo", 250); !strings.Contains(r.Text(), "Type=OS.unix=fifo;") {
		t.Errorf("MLST /fifo: %q", r.Text())
	}
	list := func(cmd string) string {
		d := c.dataConn()
		c.send(cmd)
		if r := c.read(); r.Class() != 1 {
			t.Fatalf("%s: %v", cmd, r)
		}
		data, _ := io.ReadAll(d)
		if r := c.read(); r.Code != 226 {
			t.Fatalf("%s: %v", cmd, r)
		}
		return string(data)
	}
	mlsd := list("MLSD /")
	for _, want := range []string{"Type=OS.unix=fifo;", "Type=OS.unix=socket;", "Type=file;"} {
		if !strings.Contains(mlsd, want) {
			t.Errorf("MLSD lacks %q:\n%s", want, mlsd)
		}
	}
	for _, line := range strings.Split(mlsd, "\r\n") {
		if strings.HasSuffix(line, " fifo") && strings.Contains(line, "Type=file;") {
			t.Errorf("MLSD lists the FIFO as a file: %q", line)
		}
	}
	for _, line := range strings.Split(list("LIST /"), "\r\n") {
		switch {
		case strings.HasSuffix(line, " fifo") && line[0] != 'p',
			strings.HasSuffix(line, " sock") && line[0] != 's',
			strings.HasSuffix(line, " f") && line[0] != '-':
			t.Errorf("LIST: %q", line)
		}
	}
}
