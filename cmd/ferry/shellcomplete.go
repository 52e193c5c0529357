package main

// Tab completion of ferry shell: command names, remote paths (from MLSD
// listings cached per directory) and local paths.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/progress"
)

// completionTimeout bounds the listing a Tab may wait for.
const completionTimeout = 10 * time.Second

// complete is the shell's completer (internal/lineterm).
func (s *shell) complete(ctx context.Context, head string) (int, []string, []string) {
	start, word, index := partialWord(head)
	kind := compCommand
	if index > 0 {
		words, _ := splitWords(head[:start])
		c := (*shellCmd)(nil)
		if len(words) > 0 {
			c = findShellCmd(words[0])
		}
		if c == nil {
			return 0, nil, nil
		}
		// Options do not count as arguments.
		n := 0
		for i, w := range words[1:] {
			if !strings.HasPrefix(w, "-") && (i == 0 || words[i] != "-cc") {
				n++
			}
		}
		kind = c.complete[min(n, 1)]
		if c.name == "cksum" && len(words) > 1 && words[len(words)-1] == "-a" {
			return start, nil, nil
		}
	}
	var names []string
	var dirs []bool
	var dir string
	switch kind {
	case compCommand:
		for _, c := range shellCmds {
			if strings.HasPrefix(c.name, word) {
				names = append(names, c.name)
				dirs = append(dirs, false)
			}
		}
		return start, names, nil
	case compRemote, compRemoteDir:
		dir, names, dirs = s.remoteNames(ctx, word)
	case compLocal, compLocalDir:
		dir, names, dirs = s.localNames(word)
	default:
		return start, nil, nil
	}
	base := word[len(dir):]
	var cands, display []string
	for i, n := range names {
		if !strings.HasPrefix(n, base) || strings.HasPrefix(n, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		if (kind == compRemoteDir || kind == compLocalDir) && !dirs[i] {
			continue
		}
		suffix := ""
		if dirs[i] {
			suffix = "/"
		}
		cands = append(cands, escapeWord(dir+n)+suffix)
		display = append(display, n+suffix)
	}
	return start, cands, display
}

// remoteNames lists the directory part of word on the server: dir is
// that part as typed ("" or ending in "/").
func (s *shell) remoteNames(ctx context.Context, word string) (dir string, names []string, dirs []bool) {
	if s.conn == nil {
		return "", nil, nil
	}
	if i := strings.LastIndexByte(word, '/'); i >= 0 {
		dir = word[:i+1]
	}
	entries, err := s.remoteListing(ctx, s.rpath(dir))
	if err != nil {
		return dir, nil, nil
	}
	for _, e := range entries {
		if !progress.IsPrintable(e.Name) {
			// Completion would put the name's control characters on
			// the line, and so on the terminal.
			continue
		}
		names = append(names, e.Name)
		dirs = append(dirs, isDirType(e.Type))
	}
	return dir, names, dirs
}

// remoteListing returns the cached listing of the remote directory p, or
// reads it.
func (s *shell) remoteListing(ctx context.Context, p string) ([]client.Entry, error) {
	if l, ok := s.listings[p]; ok && time.Since(l.at) < listingTTL {
		return l.entries, nil
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	entries, err := s.conn.List(ctx, p)
	if err != nil {
		s.checkConn(context.WithoutCancel(ctx), err)
		return nil, err
	}
	slices.SortFunc(entries, func(a, b client.Entry) int { return strings.Compare(a.Name, b.Name) })
	if len(s.listings) > 64 {
		clear(s.listings)
	}
	s.listings[p] = listing{at: time.Now(), entries: entries}
	return entries, nil
}

// localNames lists the directory part of word on the local side.
func (s *shell) localNames(word string) (dir string, names []string, dirs []bool) {
	if i := strings.LastIndexByte(word, '/'); i >= 0 {
		dir = word[:i+1]
	}
	p := s.lcwd
	if dir != "" {
		p = s.lpath(dir)
	}
	des, err := os.ReadDir(p)
	if err != nil {
		return dir, nil, nil
	}
	for _, d := range des {
		isDir := d.IsDir()
		if d.Type()&os.ModeSymlink != 0 {
			if fi, err := os.Stat(filepath.Join(p, d.Name())); err == nil {
				isDir = fi.IsDir()
			}
		}
		names = append(names, d.Name())
		dirs = append(dirs, isDir)
	}
	return dir, names, dirs
}
