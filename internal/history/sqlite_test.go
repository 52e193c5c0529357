package history

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSQLite(t *testing.T) {
	runStoreTests(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "history.db") })
}

// TestSQLiteProcesses has writers processes add records to one fresh
// file at once.
func TestSQLiteProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for w := range writers {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+strconv.Itoa(w)+":"+path)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("writer %d: %v\n%s", w, err, out.Bytes())
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	checkWriters(t, open(t, path), writers, recordsPerWriter)
}

// TestSQLiteCorrupt opens damaged files: each is moved aside, with a
// warning naming both files, and a new database takes its place.
func TestSQLiteCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"garbage", func(t *testing.T, path string) {
			junk := bytes.Repeat([]byte("this is not an SQLite database\x00\xff"), 1000)
			if err := os.WriteFile(path, junk, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func(t *testing.T, path string) {
			s, err := Open(t.Context(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				r := writerRecord(0, i)
				r.Error = strings.Repeat("x", 500)
				if _, err := s.Add(t.Context(), &r); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + "-wal"); err == nil {
				t.Fatal("the write-ahead log outlived Close")
			}
			if err := os.Truncate(path, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "history.db")
			tt.damage(t, path)
			damaged, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			s, err := Open(t.Context(), path, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 || !regexp.MustCompile(`\.corrupt-\d{8}T\d{6}$`).MatchString(aside[0]) {
				t.Fatalf("moved aside: %v", aside)
			}
			if b, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(b, damaged) {
				t.Errorf("the damaged file was not kept as it was (%v)", err)
			}
			if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, path) || !strings.Contains(l, aside[0]) {
				t.Errorf("warning %q does not name %s and %s", l, path, aside[0])
			}
			t.Log(log.String())
			r := add(t, s, full())
			if got := records(t, s, Filter{}); len(got) != 1 || got[0].ID != r.ID {
				t.Errorf("the new database holds %v", ids(got))
			}
		})
	}
}

// TestSQLiteDefaultPath opens the default file, under $XDG_DATA_HOME or
// ~/.local/share, creating the directory 0700.
func TestSQLiteDefaultPath(t *testing.T) {
	tests := []struct {
		name       string
		xdg, home  string
		want       string
		createsDir string
	}{
		{"XDG_DATA_HOME", "/XDG/data", "/HOME", "/XDG/data/ferry/history.db", "/XDG/data/ferry"},
		{"home", "", "/HOME", "/HOME/.local/share/ferry/history.db", "/HOME/.local/share/ferry"},
		{"relative XDG_DATA_HOME", "data", "/HOME", "/HOME/.local/share/ferry/history.db", "/HOME/.local/share/ferry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			in := func(p string) string {
				if strings.HasPrefix(p, "/") {
					return filepath.Join(root, p)
				}
				return p
			}
			t.Setenv("XDG_DATA_HOME", in(tt.xdg))
			t.Setenv("HOME", in(tt.home))
			p, err := DefaultPath()
			if err != nil || p != in(tt.want) {
				t.Fatalf("DefaultPath = %q, %v; want %q", p, err, in(tt.want))
			}
			s := open(t, "")
			add(t, s, full())
			st, err := os.Stat(in(tt.createsDir))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v, want 0700", tt.createsDir, st.Mode().Perm())
			}
			if _, err := os.Stat(in(tt.want)); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSQLiteOddPath opens a file whose name holds the characters of a
// URI's query, fragment and escapes.
func TestSQLiteOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b=c#d%20e f.db")
	add(t, open(t, path), full())
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if got := records(t, open(t, path), Filter{}); len(got) != 1 {
		t.Errorf("%d records", len(got))
	}
}

func TestDSN(t *testing.T) {
	tests := []struct{ flag, env, want string }{
		{"", "", ""},
		{"", "postgres://h/db", "postgres://h/db"},
		{"/tmp/h.db", "postgres://h/db", "/tmp/h.db"},
		{"off", "", "off"},
	}
	for _, tt := range tests {
		t.Setenv(EnvDSN, tt.env)
		if got := DSN(tt.flag); got != tt.want {
			t.Errorf("DSN(%q) with $%s=%q = %q, want %q", tt.flag, EnvDSN, tt.env, got, tt.want)
		}
	}
}

func TestOff(t *testing.T) {
	s, err := Open(t.Context(), "off", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(Off); !ok {
		t.Fatalf("Open(off) = %T", s)
	}
	ctx := t.Context()
	if id, err := s.Add(ctx, &Record{}); id != 0 || err != nil {
		t.Errorf("Add = %d, %v", id, err)
	}
	if id, err := s.AddProbe(ctx, &Probe{}); id != 0 || err != nil {
		t.Errorf("AddProbe = %d, %v", id, err)
	}
	rs, err1 := s.Records(ctx, Filter{})
	ps, err2 := s.Probes(ctx, Filter{})
	ls, err3 := s.Links(ctx, Filter{})
	if len(rs)+len(ps)+len(ls) != 0 || errors.Join(err1, err2, err3) != nil {
		t.Errorf("lists %v %v %v, errors %v %v %v", rs, ps, ls, err1, err2, err3)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

// TestMigrations checks the embedded schema files of both back-ends.
func TestMigrations(t *testing.T) {
	for _, dir := range []string{"migrations/sqlite", "migrations/postgres"} {
		ms, err := migrations(migrationFS, dir)
		if err != nil {
			t.Fatal(err)
		}
		var vs []int
		for _, m := range ms {
			vs = append(vs, m.version)
		}
		if len(ms) == 0 || !reflect.DeepEqual(vs[:1], []int{1}) {
			t.Errorf("%s: versions %v", dir, vs)
		}
	}
}
