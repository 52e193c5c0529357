package main

// Error texts for the user: each thing said once.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/ferrygrid/ferry/transfer"
)

// dialError is the error of a failed connection to the remote location l:
// "connect to HOST:PORT: REASON", where REASON is the system's without the
// address again ("connection refused", not "dial tcp 1.2.3.4:21: connect:
// connection refused"). A refused ftp:// connection to port 21 gets a
// hint: Ferry's servers listen on 2811 by default.
func dialError(l location, err error) error {
	reason := err
	var oe *net.OpError
	if errors.As(reason, &oe) && oe.Op == "dial" && oe.Err != nil {
		reason = oe.Err
		var se *os.SyscallError
		if errors.As(reason, &se) {
			reason = se.Err
		}
	}
	if _, port, _ := net.SplitHostPort(l.addr); port == "21" && !l.gsi && errors.Is(err, syscall.ECONNREFUSED) {
		scheme := "ftp"
		if l.ftps {
			scheme = "ftps"
		}
		reason = fmt.Errorf("%w (Ferry servers listen on port 2811 by default: try %s://%s/)", reason, scheme, net.JoinHostPort(l.hostname, "2811"))
	}
	return &opError{What: "connect to " + l.addr, Err: reason}
}

// plural is "1 file", "2 files": n and the singular or plural noun.
func plural(n int, one, many string) string { return plural64(int64(n), one, many) }

// plural64 is plural for an int64.
func plural64(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// destError is the error of creating the temporary file of a download
// to final: it names final, the file the user asked for, not the hidden
// temporary file beside it ("create DST: permission denied").
func destError(final string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return &os.PathError{Op: "create", Path: final, Err: pe.Err}
	}
	return err
}

// dumpFileNote is what cp says when -df FILE exists: FILE, left by an
// earlier run, holds the pairs that failed then and is this run's input,
// in place of args.
func dumpFileNote(file string, args []string) string {
	s := fmt.Sprintf("ferry cp: note: -df %s exists (the pairs that failed in an earlier run): copying its pairs", file)
	if len(args) > 0 {
		shown := make([]string, len(args))
		for i, a := range args {
			shown[i] = redactURL(a)
			if l, err := parseLocation(a); err == nil {
				shown[i] = l.String()
			}
		}
		s += " instead of " + strings.Join(shown, " ")
	}
	return s + "; remove it to start afresh"
}

// withNote returns err for ferry CMD to print; a transfer.LeftError's
// note is printed after it on a line of its own, and the exit status is
// 1.
func withNote(e *env, cmd string, err error) error {
	var le *transfer.LeftError
	if !errors.As(err, &le) {
		return err
	}
	fmt.Fprintf(e.stderr, "ferry %s: %v\n", cmd, err)
	fmt.Fprintf(e.stderr, "ferry %s: %s\n", cmd, le.Note)
	return exitError{code: 1}
}
