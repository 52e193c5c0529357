package transfer

import (
	"errors"
	"net/url"
	"os"
	"path"
	"path/filepath"
)

// Kind says what a Location names.
type Kind int

const (
	Local  Kind = iota // a local file
	Remote             // a file on an FTP/GridFTP server
	Stdio              // standard input (as a source) or output (as a destination)
)

// Location is one end of a copy.
type Location struct {
	Kind Kind
	// Path is the local file path, or the path on the server: absolute,
	// or relative to the login directory.
	Path string
	// Addr ("host:port") and Host are where a Remote location is.
	Addr, Host string
	// GSI is set for gsiftp:// (GSI authentication), FTPS for ftps://
	// (explicit FTPS).
	GSI, FTPS bool
	// User and Pass come from the URL; HasUser and HasPass say whether
	// the URL has them at all.
	User, Pass       string
	HasUser, HasPass bool
	// Display names the location in messages, without a password.
	Display string
	// Root, when not nil, confines a Local location to a directory
	// tree: Path must lie under Root.Name() (or be relative to it), and
	// Engine.Copy opens, creates, stats, renames and removes the file,
	// its temporary and part files, its resume state (RangesSuffix) and
	// the directories above it (CreateDirs) only through Root, which
	// refuses a path that leaves the tree by ".." or by a symbolic link
	// at the moment it is used (ErrEscape). Nil: by name, following
	// symbolic links. The caller keeps Root open until the copy returns.
	Root *os.Root
}

func (l Location) String() string { return l.Display }

// Endpoint names the endpoint of a Remote location: its URL prefix with
// user and password (scheme://[user[:pass]@]host:port); "" for others.
// Copies to the same endpoint share sessions.
func (l Location) Endpoint() string { return endpointKey(l) }

// LocalLocation is the Location of the local file name.
func LocalLocation(name string) Location {
	return Location{Kind: Local, Path: name, Display: name}
}

// endpointKey names the endpoint of a remote Location: its URL prefix
// with user and password; "" for local files.
func endpointKey(l Location) string {
	if l.Kind != Remote {
		return ""
	}
	u := url.URL{Scheme: "ftp", Host: l.Addr}
	switch {
	case l.GSI:
		u.Scheme = "gsiftp"
	case l.FTPS:
		u.Scheme = "ftps" // never shares a session with ftp:// of the same host
	}
	switch {
	case l.HasUser && l.HasPass:
		u.User = url.UserPassword(l.User, l.Pass)
	case l.HasUser:
		u.User = url.User(l.User)
	}
	return u.String()
}

// baseOf is the name a copy of l takes in a destination directory, or
// "" when l has none (standard input, a root).
func baseOf(l Location) string {
	var base string
	switch l.Kind {
	case Local:
		base = filepath.Base(l.Path)
	case Remote:
		base = path.Base(l.Path)
	}
	switch base {
	case ".", "/", "..":
		return ""
	}
	return base
}

// statLocal stats a local Location; remote ones give an error.
func statLocal(l Location) (os.FileInfo, error) {
	if l.Kind != Local {
		return nil, errors.New("not local")
	}
	return fsOf(l).Stat(l.Path)
}
