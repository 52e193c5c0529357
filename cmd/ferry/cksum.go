package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/ferrygrid/ferry/internal/checksum"
)

func init() {
	register(&command{
		name:    "cksum",
		summary: "print the checksum of a file on a server (CKSM) or of a local file",
		usage:   "[flags] URL|PATH",
		run:     runCksum,
	})
}

func runCksum(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["cksum"], e)
	alg := fs.String("a", "MD5", "checksum algorithm `NAME`: "+strings.Join(checksum.Names(), ", ")+" (on a server also any other it offers)")
	off := fs.Int64("off", 0, "`OFFSET` of the first byte to include")
	length := fs.Int64("len", -1, "number of bytes `N` to include (-1: to the end)")
	var g gsiFlags
	g.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one URL or path")
	}
	if *off < 0 || *length < -1 {
		return usagef("-off must not be negative, -len must be -1 or more")
	}
	a := strings.ToUpper(*alg)
	if a == "" || strings.ContainsAny(a, " \t\r\n") {
		return usagef("bad algorithm %q", *alg)
	}
	loc, err := parseLocation(fs.Arg(0))
	if err != nil {
		return usagef("%v", err)
	}
	var sum string
	switch loc.kind {
	case locRemote:
		c, err := connect(ctx, loc, clientOptions{gsi: &g})
		if err != nil {
			return err
		}
		defer hangUp(ctx, c)
		if sum, err = c.Checksum(ctx, a, loc.path, *off, *length); err != nil {
			return &opError{What: loc.String(), Err: err}
		}
	case locLocal:
		if sum, err = localChecksum(ctx, a, loc.path, *off, *length); err != nil {
			return err
		}
	default:
		return usagef("cksum needs a URL or a file")
	}
	fmt.Fprintf(e.stdout, "%s  %s\n", sum, loc)
	return nil
}

// localChecksum hashes length bytes (-1: all) of a local file from off,
// in the format CKSM replies with (lower-case hex), with an algorithm of
// internal/checksum (the one list, also cp -checksum-alg's).
func localChecksum(ctx context.Context, alg, name string, off, length int64) (string, error) {
	if _, err := checksum.New(alg); err != nil {
		return "", usagef("%v", err)
	}
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	return checksum.Compute(ctx, f, fi.Size(), off, length, alg)
}
