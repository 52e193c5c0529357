package job

import (
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// Loc is a file or directory at an endpoint.
type Loc struct {
	// End names the endpoint: "" for the local file system, else the
	// server's URL prefix, "ftp://[user[:password]@]host:port" (or
	// gsiftp://), which the caller's workers map to a session.
	End string
	// Path is the local path, or the path on the server (absolute, or
	// relative to the login directory).
	Path string
}

// Local reports whether l is on the local file system.
func (l Loc) Local() bool { return l.End == "" }

// URL returns l as a URL that ferry cp (and globus-url-copy) accept:
// file:///abs/path for local files (relative paths are made absolute),
// the endpoint followed by the escaped path for remote ones (a relative
// path after "/~/").
func (l Loc) URL() string {
	if l.Local() {
		p := l.Path
		if abs, err := filepath.Abs(p); err == nil {
			if strings.HasSuffix(p, string(filepath.Separator)) {
				abs += "/"
			}
			p = abs
		}
		return "file://" + (&url.URL{Path: filepath.ToSlash(p)}).EscapedPath()
	}
	p := l.Path
	if !strings.HasPrefix(p, "/") {
		p = "/~/" + strings.TrimPrefix(p, "./")
	}
	return l.End + (&url.URL{Path: p}).EscapedPath()
}

// String returns l for messages: the local path, or the URL without a
// password.
func (l Loc) String() string {
	if l.Local() {
		return l.Path
	}
	s := l.URL()
	if u, err := url.Parse(s); err == nil {
		// Show the path as the user would type it, unescaped.
		if r := u.Redacted(); r != "" {
			s = r
		}
		if uu, err := url.PathUnescape(s); err == nil {
			s = uu
		}
	}
	return s
}

// Pair is one copy: a file (or a symbolic link) from Src to Dst.
type Pair struct {
	Src, Dst Loc
	// Size is the source's size in bytes, -1 if unknown.
	Size int64
	// ModTime and Mode are the source's modification time and permission
	// bits (zero if unknown), for -preserve and to notice a source that
	// changed while it was read.
	ModTime time.Time
	Mode    fs.FileMode
	// Link, when not empty, asks for a symbolic link to Link at Dst
	// instead of a copy (-links copy).
	Link string
}

// sameEnds reports whether p and q join the same two endpoints in the
// same direction: a batch may hold them both.
func (p Pair) sameEnds(q Pair) bool { return p.Src.End == q.Src.End && p.Dst.End == q.Dst.End }

// Result is how one Pair ended.
type Result struct {
	Pair  Pair
	Bytes int64
	Err   error
}
