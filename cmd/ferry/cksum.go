package main

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"os"
	"strings"
)

func init() {
	register(&command{
		name:    "cksum",
		summary: "print the checksum of a file on a server (CKSM) or of a local file",
		usage:   "[flags] URL|PATH",
		run:     runCksum,
	})
}

// localHashes are the algorithms cksum computes for local files; the names
// are those of GCT's CKSM.
var localHashes = map[string]func() hash.Hash{
	"MD5":     md5.New,
	"SHA1":    sha1.New,
	"SHA256":  sha256.New,
	"SHA512":  sha512.New,
	"ADLER32": func() hash.Hash { return adler32.New() },
}

func runCksum(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["cksum"], e)
	alg := fs.String("a", "MD5", "algorithm: MD5, ADLER32, SHA1, SHA256, SHA512 (or any the server offers)")
	off := fs.Int64("off", 0, "first byte to include")
	length := fs.Int64("len", -1, "number of bytes to include (-1: to the end)")
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
			return &opError{what: loc.String(), err: err}
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
// in the format CKSM replies with (lower-case hex).
func localChecksum(ctx context.Context, alg, name string, off, length int64) (string, error) {
	newHash, ok := localHashes[alg]
	if !ok {
		return "", usagef("algorithm %s is only available for server files", alg)
	}
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = io.NewSectionReader(f, off, 1<<62)
	if length >= 0 {
		r = io.LimitReader(r, length)
	}
	h := newHash()
	if _, err := io.Copy(h, ctxReader{ctx, r}); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
