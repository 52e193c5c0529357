package history

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/leak"
)

// writerEnv, set to "WRITER:PATH", makes the test binary a writer
// process of TestSQLiteProcesses instead of running the tests.
const writerEnv = "FERRY_HISTORY_TEST_WRITER"

func TestMain(m *testing.M) {
	if v := os.Getenv(writerEnv); v != "" {
		os.Exit(writerMain(v))
	}
	// Race-enabled writers would otherwise sleep a second at exit.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	code := m.Run()
	if code == 0 {
		if err := leak.Check("github.com/ferrygrid/ferry/internal/history"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// writerMain adds the records of one writer (writerRecord) to the SQLite
// file of arg, "WRITER:PATH".
func writerMain(arg string) int {
	ws, path, _ := strings.Cut(arg, ":")
	w, err := strconv.Atoi(ws)
	if err != nil {
		fmt.Fprintf(os.Stderr, "writer: bad %s %q\n", writerEnv, arg)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Open(ctx, path, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "writer %d: %v\n", w, err)
		return 1
	}
	for i := range recordsPerWriter {
		r := writerRecord(w, i)
		if _, err := s.Add(ctx, &r); err != nil {
			fmt.Fprintf(os.Stderr, "writer %d: %v\n", w, err)
			s.Close()
			return 1
		}
	}
	if err := s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "writer %d: %v\n", w, err)
		return 1
	}
	return 0
}
