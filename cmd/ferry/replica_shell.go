package main

// get lfn:/PATH in ferry shell.

import (
	"context"
	"path/filepath"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
)

// getLFN is the shell's get of a lfn: source: as ferry cp (and with -r,
// every name below it), into the local directory, or into LOCAL. It
// needs no open connection.
func (s *shell) getLFN(ctx context.Context, o shellOpts, args []string) error {
	dst := s.lcwd + string(filepath.Separator)
	if len(args) == 2 {
		dst = s.lpath(args[1])
	}
	f := cpFlags{parallel: max(s.parallel, 1), length: -1, auto: true, explicit: s.parallel > 1,
		retries: defaultRetries, interval: client.DefaultRetryInterval, stallTimeout: defaultStallTimeout,
		checksumAlg: "MD5", history: s.historyDB, active: s.opts.active, gsi: s.opts.gsi, verbose: s.interactiveMode}
	jf := jobFlags{recursive: o.has("r"), createDirs: o.has("cd") || o.has("r")}
	return copyLFN(ctx, s.env, "shell", f, jf, job.URLPair{Src: args[0], Dst: dst})
}
