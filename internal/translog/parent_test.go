//go:build unix

package translog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/internal/translog"
)

// TestTranslogRefusesSymlinkedParent: a symbolic link in place of a
// directory of the log path is not followed; nothing is created in the
// directory it points to.
func TestTranslogRefusesSymlinkedParent(t *testing.T) {
	d := t.TempDir()
	victim := filepath.Join(d, "victimdir")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(d, "logs")); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{
		filepath.Join(d, "logs", "transfer.log"),
		filepath.Join(d, "logs", "sub", "..", "transfer.log"),
	} {
		if tl, err := translog.Open(file, nil, nil); err == nil {
			tl.Close()
			t.Errorf("Open(%s) followed a symbolic link to a parent directory", file)
		} else {
			t.Logf("refused: %v", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(victim, "transfer.log")); err == nil {
		t.Errorf("log created through a symbolic link in %s", victim)
	}
}

// TestTranslogRefusesOpenParent: a log directory anyone may write to
// (and not sticky) is refused; a sticky one, like /tmp, is not.
func TestTranslogRefusesOpenParent(t *testing.T) {
	d := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o777)
	file := filepath.Join(d, "transfer.log")
	if tl, err := translog.Open(file, nil, nil); err == nil {
		tl.Close()
		t.Error("Open accepted a world-writable, non-sticky directory")
	}
	os.Chmod(d, os.ModeSticky|0o777)
	tl, err := translog.Open(file, nil, nil)
	if err != nil {
		t.Fatalf("sticky directory: %v", err)
	}
	tl.Close()
}
