package replica

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// writerEnv, set to "WRITER:PATH", makes the test binary a writer
// process of TestSQLiteProcesses instead of running the tests.
const writerEnv = "FERRY_REPLICA_TEST_WRITER"

// processFiles is how many LFNs each writer process adds a replica of.
const processFiles = 20

func TestMain(m *testing.M) {
	if v := os.Getenv(writerEnv); v != "" {
		os.Exit(writerMain(v))
	}
	os.Exit(m.Run())
}

// writerMain adds a replica of each of processFiles LFNs to the SQLite
// file of arg, "WRITER:PATH", as writer WRITER.
func writerMain(arg string) int {
	ws, path, _ := strings.Cut(arg, ":")
	w, err := strconv.Atoi(ws)
	if err != nil {
		fmt.Fprintf(os.Stderr, "writer: bad %s %q\n", writerEnv, arg)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "writer %d: %v\n", w, err)
		return 1
	}
	defer c.Close()
	for i := range processFiles {
		r := Replica{URL: fmt.Sprintf("ftp://site%d/f%02d", w, i), Size: int64(i), Sum: fmt.Sprintf("%08x", i)}
		if err := c.Add(ctx, fmt.Sprintf("/proc/f%02d", i), "ADLER32", r); err != nil {
			fmt.Fprintf(os.Stderr, "writer %d: %v\n", w, err)
			return 1
		}
	}
	return 0
}

// TestSQLiteProcesses: writer processes open one new SQLite file at once
// (each migrating it, or finding it migrated) and add replicas of the
// same new LFNs; every replica lands.
func TestSQLiteProcesses(t *testing.T) {
	const writers = 4
	db := filepath.Join(t.TempDir(), "history.db")
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s", writerEnv, w, db))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer %d: %v\n%s", w, err, out)
			}
		})
	}
	wg.Wait()
	c, err := Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	es, err := c.List(t.Context(), "/proc")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != processFiles {
		t.Fatalf("%d LFNs, want %d", len(es), processFiles)
	}
	for _, e := range es {
		if len(e.Replicas) != writers {
			t.Errorf("%s: %d replicas, want %d", e.LFN, len(e.Replicas), writers)
		}
	}
}
