//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ferrygrid/ferry/dsi/privsep"
)

// The privsep helper: `ferry serve`, running as root, starts one per mapped
// account (dsi/privsep.Start) and talks to it over descriptor 3. It is not
// meant to be run by hand.
func init() {
	register(&command{
		name:    "privsep-helper",
		summary: "storage helper that ferry serve runs as a mapped user",
		hidden:  true,
		usage:   "-root DIR",
		run:     runPrivsepHelper,
	})
}

func runPrivsepHelper(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["privsep-helper"], e)
	root := fs.String("root", "", "the `DIR` to serve (required)")
	fd := fs.Int("fd", 3, "the descriptor `FD` of the socket to the server")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *root == "" || fs.NArg() != 0 {
		return usagef("-root DIR is required and takes no arguments")
	}
	if *fd < 3 {
		return usagef("-fd must be 3 or more")
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(*fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return fmt.Errorf("descriptor %d is not a socket; this command is started by ferry serve", *fd)
	}
	// SIGHUP is for ferry serve (reload); a helper that got it too, from a
	// signal to the whole service, must not end.
	signal.Ignore(syscall.SIGHUP)
	conn := os.NewFile(uintptr(*fd), "privsep")
	defer conn.Close()
	return privsep.Serve(ctx, conn, *root)
}
