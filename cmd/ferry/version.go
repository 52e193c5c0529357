package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/ferrygrid/ferry/internal/version"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print Ferry's version",
		usage:   "",
		run: func(ctx context.Context, e *env, args []string) error {
			fs := newFlagSet(commands["version"], e)
			if err := parseFlags(fs, args); err != nil {
				return err
			}
			rev := ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						rev = " " + s.Value[:12]
					}
				}
			}
			fmt.Fprintf(e.stdout, "ferry %s%s (%s, %s/%s)\n", version.Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	})
}
