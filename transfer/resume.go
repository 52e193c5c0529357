package transfer

// Resume state of ferry cp: what a download has stored, or what the server
// has acknowledged of an upload, kept on disk so that a later run of the
// same copy continues where a crashed or failed one stopped.
//
// Downloads keep it beside the destination (DST.ferry-ranges); uploads in
// $XDG_STATE_HOME/ferry/resume/ (default ~/.local/state/ferry/resume/),
// named by a hash of the source path and the destination URL. The file
// is text, replaced atomically (temporary file, fsync, rename), and ends
// with a CRC-32 of what precedes it; a file that does not parse, or whose
// source size, modification time or window differ, is ignored and the
// copy starts from scratch.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/atomicfile"
)

// RangesSuffix is appended to a download's destination to name its state.
const RangesSuffix = ".ferry-ranges"

// stateMagic is the first line of a state file.
const stateMagic = "ferry-resume 1"

// saveInterval is the least time between two writes of a state file.
const saveInterval = time.Second

// ResumeState describes a partial copy.
type ResumeState struct {
	Source, Dest   string // what was copied where (URL or absolute path)
	Size           int64  // the source's size, -1 if unknown
	MTime          int64  // the source's modification time, Unix nanoseconds, 0 if unknown
	Offset, Length int64  // the -off/-len window (Length -1: to the end)
	Ranges         client.RangeSet
}

// matches reports whether st describes the same copy of the same source
// version as want.
func (st ResumeState) matches(want ResumeState) bool {
	return st.Source == want.Source && st.Dest == want.Dest && st.Size == want.Size &&
		st.MTime == want.MTime && st.Offset == want.Offset && st.Length == want.Length
}

// marshal encodes st.
func (st ResumeState) marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nsource %s\ndest %s\nsize %d\nmtime %d\nwindow %d %d\nranges %s\n",
		stateMagic, strconv.Quote(st.Source), strconv.Quote(st.Dest), st.Size, st.MTime, st.Offset, st.Length, st.Ranges.String())
	fmt.Fprintf(&b, "crc %08x\n", crc32.ChecksumIEEE(b.Bytes()))
	return b.Bytes()
}

var errBadState = errors.New("bad resume state")

// parseState decodes a state file; anything but a well-formed one with a
// correct CRC is an error.
func parseState(b []byte) (ResumeState, error) {
	i := bytes.LastIndex(b, []byte("crc "))
	if i < 0 || (i > 0 && b[i-1] != '\n') {
		return ResumeState{}, fmt.Errorf("%w: no checksum", errBadState)
	}
	body, tail := b[:i], string(b[i:])
	var crc uint32
	if n, err := fmt.Sscanf(tail, "crc %08x\n", &crc); n != 1 || err != nil || tail != fmt.Sprintf("crc %08x\n", crc) {
		return ResumeState{}, fmt.Errorf("%w: bad checksum line", errBadState)
	}
	if crc32.ChecksumIEEE(body) != crc {
		return ResumeState{}, fmt.Errorf("%w: checksum mismatch", errBadState)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	want := []string{"", "source", "dest", "size", "mtime", "window", "ranges"}
	var st ResumeState
	var n int
	for sc.Scan() {
		line := sc.Text()
		if n >= len(want) {
			return ResumeState{}, fmt.Errorf("%w: extra line", errBadState)
		}
		if n == 0 {
			if line != stateMagic {
				return ResumeState{}, fmt.Errorf("%w: not a resume file", errBadState)
			}
			n++
			continue
		}
		key, val, ok := strings.Cut(line, " ")
		if !ok || key != want[n] {
			return ResumeState{}, fmt.Errorf("%w: line %d", errBadState, n+1)
		}
		var err error
		switch key {
		case "source":
			st.Source, err = strconv.Unquote(val)
		case "dest":
			st.Dest, err = strconv.Unquote(val)
		case "size":
			st.Size, err = parseInt(val, -1)
		case "mtime":
			st.MTime, err = strconv.ParseInt(val, 10, 64)
		case "window":
			a, b, ok := strings.Cut(val, " ")
			if !ok {
				err = errBadState
				break
			}
			if st.Offset, err = parseInt(a, 0); err == nil {
				st.Length, err = parseInt(b, -1)
			}
		case "ranges":
			if val != "" {
				st.Ranges, err = client.ParseRangeList(val)
				if err == nil && st.Ranges.String() != val {
					err = errors.New("not canonical")
				}
			}
		}
		if err != nil {
			return ResumeState{}, fmt.Errorf("%w: %s: %v", errBadState, key, err)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return ResumeState{}, fmt.Errorf("%w: %v", errBadState, err)
	}
	if n != len(want) {
		return ResumeState{}, fmt.Errorf("%w: truncated", errBadState)
	}
	return st, nil
}

// parseInt parses a decimal integer of at least lowest.
func parseInt(s string, lowest int64) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err == nil && v < lowest {
		err = fmt.Errorf("%d is below %d", v, lowest)
	}
	return v, err
}

// ReadResumeState reads a state file; a missing or corrupt one is an error.
func ReadResumeState(name string) (ResumeState, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return ResumeState{}, err
	}
	return parseState(b)
}

// WriteResumeState replaces the state file name atomically.
func WriteResumeState(name string, st ResumeState) error {
	return atomicfile.Write(name, st.marshal())
}

// UploadStatePath names the state file of an upload of the local file
// src (an absolute path) to the URL dst.
func UploadStatePath(getenv func(string) string, src, dst string) (string, error) {
	dir := getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(src + "\x00" + dst))
	return filepath.Join(dir, "ferry", "resume", hex.EncodeToString(sum[:16])+".Ranges"), nil
}

// stateSaver records a copy's progress in its state file, at most once
// per saveInterval unless forced. sync, when not nil, runs before each
// write, so that the ranges written are on disk before the file claims
// them. It is safe for concurrent use.
type stateSaver struct {
	name string
	sync func() error
	// write, when not nil, writes the state file instead of
	// WriteResumeState (a confined Location's).
	write func(string, ResumeState) error

	mu    sync.Mutex
	st    ResumeState // guarded by mu
	last  time.Time   // guarded by mu
	saved string      // ranges last written; guarded by mu
	err   error       // first write error; guarded by mu
}

// update records rs, writing the file if due (or if force).
func (s *stateSaver) update(rs client.RangeSet, force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Ranges = rs.Clone()
	text := rs.String()
	if !force && (text == s.saved || time.Since(s.last) < saveInterval) {
		return nil
	}
	var err error
	if s.sync != nil {
		err = s.sync()
	}
	if err == nil {
		if s.write != nil {
			err = s.write(s.name, s.st)
		} else {
			err = WriteResumeState(s.name, s.st)
		}
	}
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return err
	}
	s.last, s.saved = time.Now(), text
	return nil
}

// flush writes the latest ranges now.
func (s *stateSaver) flush() error {
	s.mu.Lock()
	rs := s.st.Ranges.Clone()
	s.mu.Unlock()
	return s.update(rs, true)
}
