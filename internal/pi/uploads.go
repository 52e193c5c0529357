package pi

import (
	"context"
	"path"
	"strings"
	"sync"

	"github.com/ferrygrid/ferry/dsi"
)

// Uploads records the uploads in progress on a server, so that other
// sessions cannot take part in them: a second upload to the same file, a
// rename or deletion of it, its part file or a directory above it would
// let one client slip bytes into another's upload, take them, or make its
// final rename land elsewhere. Each upload is known by keys (see
// session.uploadKeys): its files by path and by (directory, name) with the
// directory's unique identity, so that another spelling of the path (a
// symbolic link to a directory) finds the same upload; its directories by
// path and identity. The zero value is ready; nil records nothing.
type Uploads struct {
	mu     sync.Mutex
	files  map[string]int // keys of the files being written; guarded by mu
	parent map[string]int // keys of the directories above them; guarded by mu

	parts partLedger // the part files of the server's uploads (parts.go)
}

// uploadKeys are an upload's, or a command's, keys.
type uploadKeys struct {
	files, dirs []string
}

// begin records an upload; ok is false, and nothing is recorded, when
// another upload writes any of its files.
func (u *Uploads) begin(k uploadKeys) (end func(), ok bool) {
	if u == nil {
		return func() {}, true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, f := range k.files {
		if u.files[f] > 0 {
			return nil, false
		}
	}
	if u.files == nil {
		u.files, u.parent = map[string]int{}, map[string]int{}
	}
	for _, f := range k.files {
		u.files[f]++
	}
	for _, d := range k.dirs {
		u.parent[d]++
	}
	return sync.OnceFunc(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, f := range k.files {
			if u.files[f]--; u.files[f] <= 0 {
				delete(u.files, f)
			}
		}
		for _, d := range k.dirs {
			if u.parent[d]--; u.parent[d] <= 0 {
				delete(u.parent, d)
			}
		}
	}), true
}

// busy reports whether an upload writes what k names, or lies below it.
func (u *Uploads) busy(k uploadKeys) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, f := range k.files {
		if u.files[f] > 0 || u.parent[f] > 0 {
			return true
		}
	}
	for _, d := range k.dirs {
		if u.files[d] > 0 || u.parent[d] > 0 {
			return true
		}
	}
	return false
}

// uploadKeys names p for Config.Uploads: by its path in the server's
// storage, and by its directory's identity and its name. With dirs, the
// directories above p (to the account's root) are named too, by path and
// identity; for a command on p, p itself when it is a directory.
func (s *session) uploadKeys(ctx context.Context, p string, above bool) uploadKeys {
	return s.uploadKeysStat(ctx, p, above, s.fs.Stat)
}

// uploadKeysStat is uploadKeys with the lookups of stat (a statMemo's,
// to share them with the rest of a command's planning).
func (s *session) uploadKeysStat(ctx context.Context, p string, above bool, stat func(context.Context, string) (dsi.FileInfo, error)) uploadKeys {
	var k uploadKeys
	k.files = append(k.files, "p:"+path.Join("/", s.acct.Home, p))
	fi, err := stat(ctx, p)
	// The file's own identity, through any link to it (uploads in place).
	if err == nil && !fi.IsDir() && fi.Unique != "" {
		k.files = append(k.files, "f:"+fi.Unique)
	}
	dir, base := path.Split(p)
	dir = path.Clean("/" + dir)
	parent, perr := stat(ctx, dir)
	if perr == nil && parent.Unique != "" {
		k.files = append(k.files, "u:"+parent.Unique+"/"+base)
	}
	if !above {
		if err == nil && fi.IsDir() && fi.Unique != "" {
			k.dirs = append(k.dirs, "d:"+fi.Unique)
		}
		return k
	}
	for d := dir; ; d = path.Dir(d) {
		k.dirs = append(k.dirs, "p:"+path.Join("/", s.acct.Home, d))
		if d != dir {
			parent, perr = stat(ctx, d)
		}
		if perr == nil && parent.Unique != "" {
			k.dirs = append(k.dirs, "d:"+parent.Unique)
		}
		if d == "/" || strings.Count(d, "/") > 64 {
			break
		}
	}
	return k
}

// statMemo looks paths up in a file system once: the planning of one
// upload asks for the file, its directory and the directories above it
// several times within microseconds, a few system calls each.
type statMemo struct {
	fs   dsi.Storage
	seen []statSeen
}

type statSeen struct {
	p   string
	fi  dsi.FileInfo
	err error
}

// Stat is fs.Stat of p, or what it returned the first time.
func (m *statMemo) Stat(ctx context.Context, p string) (dsi.FileInfo, error) {
	for _, e := range m.seen {
		if e.p == p {
			return e.fi, e.err
		}
	}
	fi, err := m.fs.Stat(ctx, p)
	m.seen = append(m.seen, statSeen{p, fi, err})
	return fi, err
}
