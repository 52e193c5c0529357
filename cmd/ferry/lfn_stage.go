package main

// The staging of a single-source lfn: copy: the replica's bytes go to a
// temporary name beside the destination, and replace it only when their
// checksum matches the catalogue's.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/transfer"
)

// stagedDest is the temporary name a copy of a logical file is written
// under until it is verified.
type stagedDest struct {
	dst   location // the destination proper
	stage location // beside it: ".BASE.ferry-lfn-RANDOM", shown as dst
	o     clientOptions
}

// stageSuffix marks the temporary files of lfn: copies.
const stageSuffix = ".ferry-lfn-"

// newStagedDest picks the temporary name of a copy to dst. A remote dst
// that is an existing directory receives the file as base (as the
// engine does for a plain copy), which needs a connection to see.
func newStagedDest(ctx context.Context, dst location, base string, o clientOptions) (*stagedDest, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	tag := stageSuffix + hex.EncodeToString(b[:])
	s := &stagedDest{dst: dst, o: o}
	switch dst.kind {
	case locLocal:
		s.stage = dst
		s.stage.path = filepath.Join(filepath.Dir(dst.path), "."+filepath.Base(dst.path)+tag)
	case locRemote:
		if !strings.HasSuffix(dst.path, "/") {
			conn, err := connect(ctx, dst, o)
			if err != nil {
				return nil, err
			}
			if in, err := conn.Stat(ctx, dst.path); err == nil && in.Type == "dir" {
				s.dst.path = strings.TrimSuffix(dst.path, "/") + "/" + base
				s.dst.display = strings.TrimSuffix(dst.display, "/") + "/" + base
			}
			hangUp(ctx, conn)
		}
		s.stage = s.dst
		s.stage.path = path.Join(path.Dir(s.dst.path), "."+path.Base(s.dst.path)+tag)
	default:
		return nil, usagef("%s: an lfn: source is copied to a file or a server", dst)
	}
	return s, nil
}

// commit renames the verified copy onto the destination.
func (s *stagedDest) commit(ctx context.Context) error {
	if s.dst.kind == locLocal {
		if err := os.Rename(s.stage.path, s.dst.path); err != nil {
			return &opError{What: "rename the verified copy to " + s.dst.display, Err: err}
		}
		return nil
	}
	conn, err := connect(ctx, s.dst, s.o)
	if err != nil {
		return err
	}
	defer hangUp(ctx, conn)
	if err := conn.Rename(ctx, s.stage.path, s.dst.path); err != nil {
		return &opError{What: "rename the verified copy " + s.stage.path + " to " + s.dst.display, Err: err}
	}
	return nil
}

// discard removes what is left of the temporary copy: the file, and
// the resume state of a download written in place.
func (s *stagedDest) discard(ctx context.Context) {
	if s.dst.kind == locLocal {
		os.Remove(s.stage.path)
		os.Remove(s.stage.path + transfer.RangesSuffix)
		return
	}
	// Also after the copy was cancelled: a stray file is left otherwise.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	conn, err := connect(ctx, s.dst, s.o)
	if err != nil {
		return
	}
	defer hangUp(ctx, conn)
	if _, err := conn.Stat(ctx, s.stage.path); err == nil {
		_ = conn.Delete(ctx, s.stage.path)
	}
}
