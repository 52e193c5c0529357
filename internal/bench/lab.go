package bench

// What the lab benchmarks ("ferry bench stripe", "ferry bench replicas")
// share: their defaults, a scratch directory on tmpfs, the lab hosts' TCP
// buffers, the loop over repetitions, and the progress and CSV fields of a
// run with what the machine's CPUs did meanwhile.

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// inLabScratch fills a lab benchmark's zero timeout (10 minutes) and nil
// progress (discarded), makes its scratch directory (see labScratch) and
// returns what run returns in it; the directory is removed at the end.
func inLabScratch[R any](timeout *time.Duration, progress *io.Writer, dir, prefix string, run func(scratch string) ([]R, error)) ([]R, error) {
	if *timeout <= 0 {
		*timeout = 10 * time.Minute
	}
	if *progress == nil {
		*progress = io.Discard
	}
	scratch, err := labScratch(dir, prefix)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	return run(scratch)
}

// labScratch makes a lab benchmark's scratch directory, named after
// prefix, below dir: "" means /dev/shm (tmpfs) where it exists, else the
// temp dir. It is open to everyone (GCT's sessions run as nobody); the
// caller removes it.
func labScratch(dir, prefix string) (string, error) {
	if dir == "" {
		dir = "/dev/shm"
		if _, err := os.Stat(dir); err != nil {
			dir = os.TempDir()
		}
	}
	scratch, err := os.MkdirTemp(dir, prefix)
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if err := os.Chmod(scratch, 0o755); err != nil {
		os.RemoveAll(scratch)
		return "", fmt.Errorf("bench: %w", err)
	}
	return scratch, nil
}

// labSysctls returns the TCP buffer limits of every lab host: large
// enough for the lab's rates and delays, bounded so that the hosts'
// sockets do not take the machine's memory.
func labSysctls() map[string]string {
	return map[string]string{"net.ipv4.tcp_rmem": "4096 131072 8388608", "net.ipv4.tcp_wmem": "4096 16384 8388608"}
}

// labRuns makes reps repetitions of a run of every kind, the kinds in
// turn within each repetition (so that drift in the machine's state
// affects all of them alike), and returns the results. run makes one run
// and reports its failure in the result. When ctx ends, labRuns returns
// the results before the run it interrupted, with ctx's cause.
func labRuns[K, R any](ctx context.Context, reps int, kinds []K, run func(k K, rep int) R) ([]R, error) {
	var results []R
	for rep := range reps {
		for _, k := range kinds {
			res := run(k, rep)
			if ctx.Err() != nil {
				return results, context.Cause(ctx)
			}
			results = append(results, res)
		}
	}
	return results, nil
}

// labRunLine writes the progress line of a lab run named what (0-based
// rep): its failure, or its rate, size and time, extra (ending in "; "
// when not empty) and what the machine's CPUs did.
func labRunLine(w io.Writer, what string, rep int, failure string, n int64, wall time.Duration, extra string, cpu cpuShare) {
	if failure != "" {
		fmt.Fprintf(w, "bench: %s rep %d: %s\n", what, rep+1, failure)
		return
	}
	fmt.Fprintf(w, "bench: %s rep %d: %.0f Mbit/s (%d bytes in %v; %s%.2f cores busy, %.1f%% stolen)\n",
		what, rep+1, bitRate(n, wall)/1e6, n, wall.Round(time.Millisecond), extra, cpu.Busy, 100*cpu.Steal)
}

// labRunFields renders the CSV fields of a lab run's time and rate (the
// rate empty for a failed run).
func labRunFields(failure string, n int64, wall time.Duration) []string {
	mb := ""
	if failure == "" {
		mb = strconv.FormatFloat(bitRate(n, wall)/1e6, 'f', 1, 64)
	}
	return []string{strconv.FormatFloat(wall.Seconds(), 'f', 3, 64), mb}
}
