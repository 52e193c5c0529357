package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// labBenchFlags are the flags the lab benchmarks (ferry bench stripe,
// ferry bench replicas) share.
type labBenchFlags struct {
	ferry, dir, csv *string
	timeout         *time.Duration
}

// addLabBenchFlags defines the shared flags of a lab benchmark on fs.
func addLabBenchFlags(fs *flag.FlagSet) labBenchFlags {
	return labBenchFlags{
		ferry:   fs.String("ferry", "", "the ferry `BINARY` to benchmark (default: this executable)"),
		dir:     fs.String("dir", "", "`DIR` for the scratch directory (default: /dev/shm)"),
		timeout: fs.Duration("timeout", 5*time.Minute, "time limit `DURATION` for each client run"),
		csv:     fs.String("csv", "", "also write every run to `FILE` as CSV"),
	}
}

// defaultFerry sets *path to this executable when it is empty.
func defaultFerry(path *string) error {
	if *path != "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this executable: %w (give -ferry)", err)
	}
	*path = exe
	return nil
}

// finishLabBench reports the results of a lab benchmark: the table on
// stdout and, with csvPath, every run as CSV. It returns runErr, else an
// error when a run failed.
func finishLabBench[R any](e *env, csvPath string, results []R, runErr error, table, csv func(io.Writer) error, failed func(R) bool) error {
	if len(results) > 0 {
		if err := table(e.stdout); err != nil {
			return err
		}
		if csvPath != "" {
			if err := writeFileWith(csvPath, csv); err != nil {
				return err
			}
		}
	}
	if runErr != nil {
		return runErr
	}
	n := 0
	for _, r := range results {
		if failed(r) {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("%d of %d runs failed (see above)", n, len(results))
	}
	return nil
}
