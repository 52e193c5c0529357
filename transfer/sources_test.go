package transfer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCopyAny fails over from a server without the file and from one
// whose copy the check refuses to the one that works, reporting each
// failure; with no source left it returns every error.
func TestCopyAny(t *testing.T) {
	want := randomData(t, 300<<10)
	a, b, c := startServer(t), startServer(t), startServer(t)
	wrong := bytes.Clone(want)
	wrong[1000] ^= 1
	writeFile(t, filepath.Join(b.dir, "f"), wrong)
	writeFile(t, filepath.Join(c.dir, "f"), want)
	dst := filepath.Join(t.TempDir(), "f")
	check := func(_ context.Context, res Result) error {
		got, err := os.ReadFile(res.Dst.Path)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			os.Remove(res.Dst.Path)
			return errors.New("contents differ")
		}
		return nil
	}
	var failed []*SourceError
	var notes []string
	e := &Engine{}
	srcs := []Location{a.loc("f"), b.loc("f"), c.loc("f")}
	res, i, err := e.CopyAny(t.Context(), srcs, Request{Dst: LocalLocation(dst)}, check,
		func(se *SourceError) { failed = append(failed, se) },
		func(ev Event) {
			if ev.Kind == EventNote {
				notes = append(notes, ev.Note)
			}
		})
	if err != nil || i != 2 || res.Src.Display != srcs[2].Display {
		t.Fatalf("CopyAny = %d, %v", i, err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, want) {
		t.Error("the copy differs")
	}
	if len(failed) != 2 || failed[0].Check || !failed[1].Check {
		t.Errorf("failures %v", failed)
	}
	if len(notes) != 2 {
		t.Errorf("notes %q", notes)
	}
	t.Log(notes)

	_, i, err = e.CopyAny(t.Context(), srcs[:2], Request{Dst: LocalLocation(dst + "2")}, check, nil, nil)
	var all *AllSourcesError
	if !errors.As(err, &all) || i != -1 || len(all.Errs) != 2 {
		t.Fatalf("CopyAny of bad sources = %d, %v", i, err)
	}
	t.Log(err)
	if _, err := os.Stat(dst + "2"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed CopyAny left %s: %v", dst+"2", err)
	}
}
