package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/transfer"
)

// endpoint is a server or local directory tree a user opened in a pane.
// Its credentials stay in the server, in the user's state.
type endpoint struct {
	ID      string `json:"id"`
	Display string `json:"url"`  // the URL without password
	Base    string `json:"base"` // the URL prefix of its paths: "file://", "ftp://user@host:port"
	Home    string `json:"home"` // the path the pane opens at
	local   bool
	root    string            // local: the allowed root it lies in
	loc     transfer.Location // remote: the server, with user and password
	dialer  func(ctx context.Context, l transfer.Location) (*client.Conn, error)
	opened  time.Time
}

// maxEndpoints bounds the endpoints a user keeps open.
const maxEndpoints = 64

// errEscape refuses a local path outside the endpoint's root.
var errEscape = errors.New("path outside the allowed directories")

// entry is one directory entry as the page shows it.
type entry struct {
	Name  string    `json:"name"`
	Type  string    `json:"type"` // "file", "dir", "link" or "other"
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
	Perm  string    `json:"perm"`
}

type openRequest struct {
	URL      string `json:"url"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
}

// newEndpoint checks and opens an endpoint for u.
func (a *App) newEndpoint(ctx context.Context, u *userState, req openRequest) (*endpoint, error) {
	l, err := transfer.ParseLocation(req.URL)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(req.URL, "://") {
		return nil, errors.New("give a URL: ftp://host/path, file:///path")
	}
	ep := &endpoint{ID: newToken()[:16]}
	switch {
	case l.Kind == transfer.Local:
		p := filepath.Clean(l.Path)
		root, err := a.rootOf(p)
		if err != nil {
			return nil, err
		}
		ep.local, ep.root, ep.Home = true, root, p
		ep.Display, ep.Base = "file://"+filepath.ToSlash(p), "file://"
		if _, err := ep.lstatLocal(p); err != nil {
			return nil, err
		}
	case l.Kind == transfer.Remote:
		if l.FTPS {
			return nil, errors.New("ftps:// endpoints are not supported yet: use ftp:// or gsiftp://")
		}
		if req.User != "" {
			l.User, l.HasUser = req.User, true
			l.Pass, l.HasPass = req.Password, req.Password != ""
		}
		ep.loc = l
		ep.dialer = func(ctx context.Context, l transfer.Location) (*client.Conn, error) { return a.dial(ctx, u, l) }
		scheme := "ftp://"
		if l.GSI {
			scheme = "gsiftp://"
		}
		ep.Base = scheme + l.Addr
		if l.HasUser {
			ep.Base = scheme + l.User + "@" + l.Addr
		}
		ep.Display = ep.Base
		c, err := ep.dial(ctx)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		ep.Home = l.Path
		if ep.Home == "" || ep.Home == "/" || strings.HasPrefix(ep.Home, "./") || !strings.HasPrefix(ep.Home, "/") {
			if pwd, err := c.Pwd(ctx); err == nil && strings.HasPrefix(pwd, "/") {
				ep.Home = pwd
			} else {
				ep.Home = "/"
			}
		}
		ep.Home = path.Clean(ep.Home)
	default:
		return nil, errors.New("unsupported endpoint")
	}
	return ep, nil
}

// rootOf returns the allowed root that holds the clean absolute path p.
func (a *App) rootOf(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", errEscape
	}
	for _, r := range a.roots {
		if within(r, p) {
			return r, nil
		}
	}
	return "", fmt.Errorf("%s: %w", p, errEscape)
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// rel returns p relative to the endpoint's root, for os.Root, refusing
// paths that leave it.
func (ep *endpoint) rel(p string) (string, error) {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) || !within(ep.root, p) {
		return "", fmt.Errorf("%s: %w", p, errEscape)
	}
	rel, _ := filepath.Rel(ep.root, p)
	return rel, nil
}

// openRoot opens the endpoint's root; operations through it cannot
// leave it, by ".." or by symbolic links.
func (ep *endpoint) openRoot() (*os.Root, error) { return os.OpenRoot(ep.root) }

// inRoot calls f with the endpoint's open root and the local path p
// relative to it (ep.rel), and closes the root.
func (ep *endpoint) inRoot(p string, f func(r *os.Root, rel string) error) error {
	rel, err := ep.rel(p)
	if err != nil {
		return err
	}
	r, err := ep.openRoot()
	if err != nil {
		return err
	}
	defer r.Close()
	return f(r, rel)
}

// withConn calls f with a new connection to the endpoint's server, and
// closes it.
func (ep *endpoint) withConn(ctx context.Context, f func(c *client.Conn) error) error {
	c, err := ep.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

func (ep *endpoint) lstatLocal(p string) (fi fs.FileInfo, err error) {
	err = ep.inRoot(p, func(r *os.Root, rel string) error {
		fi, err = r.Stat(rel)
		return err
	})
	return fi, err
}

// checkLocal makes sure p, with its symbolic links followed, stays in
// the root, open as r: what the engine will open by name. For a
// destination to be, its nearest existing ancestor must.
func (ep *endpoint) checkLocal(r *os.Root, p string) error {
	for {
		rel, err := ep.rel(p)
		if err == nil {
			_, err = r.Stat(rel)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return confined(err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return err
		}
		p = parent
	}
}

// badRequest marks an error as the client's.
type badRequest struct{ err error }

func (b badRequest) Error() string { return b.err.Error() }
func (b badRequest) Unwrap() error { return b.err }

// confined turns os.Root's refusal of a path that escapes into errEscape.
func confined(err error) error {
	// os.Root exports no sentinel for "path escapes from parent".
	var pe *os.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return fmt.Errorf("%s: %w", pe.Path, errEscape)
	}
	return err
}

func (ep *endpoint) dial(ctx context.Context) (*client.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return ep.dialer(ctx, ep.loc)
}

// location is the engine's Location of p on the endpoint. A local one
// is confined to root, the endpoint's open root: the engine opens,
// creates, renames and removes its files only through it, so that a
// symbolic link placed in the tree after the checks cannot lead it out.
func (ep *endpoint) location(p string, root *os.Root) transfer.Location {
	if ep.local {
		l := transfer.LocalLocation(p)
		l.Root = root
		return l
	}
	l := ep.loc
	l.Path = p
	l.Display = ep.Base + p
	return l
}

// historyEndpoint is the history's name of the endpoint.
func (ep *endpoint) historyEndpoint() history.Endpoint {
	if ep.local {
		return history.Endpoint{Scheme: "file"}
	}
	return ep.loc.HistoryEndpoint()
}

// clean cleans an endpoint path; local paths in the host's syntax.
func (ep *endpoint) clean(p string) string {
	if ep.local {
		return filepath.Clean(p)
	}
	return path.Clean("/" + p)
}

func (ep *endpoint) join(dir, name string) string {
	if ep.local {
		return filepath.Join(dir, name)
	}
	return path.Join(dir, name)
}

// checkName refuses names that are not one path element.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("bad name %q", name)
	}
	return nil
}

// maxListEntries bounds the entries of a listing the app returns (and,
// for this host's files, reads); a variable for the tests.
var maxListEntries = 200000

func (ep *endpoint) list(ctx context.Context, p string) ([]entry, error) {
	if ep.local {
		var des []fs.DirEntry
		err := ep.inRoot(p, func(r *os.Root, rel string) error {
			f, err := r.Open(rel)
			if err != nil {
				return err
			}
			defer f.Close()
			des, err = f.ReadDir(maxListEntries + 1)
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(des) > maxListEntries {
			return nil, badRequest{fmt.Errorf("%s has more than %d entries", p, maxListEntries)}
		}
		out := make([]entry, 0, len(des))
		for _, d := range des {
			fi, err := d.Info()
			if err != nil {
				continue
			}
			e := entry{Name: d.Name(), Size: fi.Size(), MTime: fi.ModTime().UTC(), Perm: fi.Mode().Perm().String()[1:], Type: "other"}
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				e.Type = "link"
			case fi.IsDir():
				e.Type = "dir"
			case fi.Mode().IsRegular():
				e.Type = "file"
			}
			out = append(out, e)
		}
		return out, nil
	}
	var es []client.Entry
	err := ep.withConn(ctx, func(c *client.Conn) (err error) {
		es, err = c.List(ctx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(es) > maxListEntries {
		return nil, badRequest{fmt.Errorf("%s has more than %d entries", p, maxListEntries)}
	}
	out := make([]entry, 0, len(es))
	for _, e := range es {
		x := entry{Name: e.Name, Size: e.Size, MTime: e.Modify.UTC(), Type: "other"}
		switch strings.ToLower(e.Type) {
		case "file":
			x.Type = "file"
		case "dir":
			x.Type = "dir"
		case "slink":
			x.Type = "link"
		}
		if e.Mode >= 0 {
			x.Perm = fs.FileMode(e.Mode).Perm().String()[1:]
		} else {
			x.Perm = e.Perm
		}
		out = append(out, x)
	}
	return out, nil
}

func (ep *endpoint) mkdir(ctx context.Context, p string) error {
	if ep.local {
		return ep.inRoot(p, func(r *os.Root, rel string) error { return r.Mkdir(rel, 0o755) })
	}
	return ep.withConn(ctx, func(c *client.Conn) error { return c.Mkdir(ctx, p) })
}

func (ep *endpoint) rename(ctx context.Context, from, to string) error {
	if ep.local {
		rf, err := ep.rel(from)
		if err != nil {
			return err
		}
		return ep.inRoot(to, func(r *os.Root, rt string) error { return r.Rename(rf, rt) })
	}
	return ep.withConn(ctx, func(c *client.Conn) error { return c.Rename(ctx, from, to) })
}

// remove deletes a file or an empty directory.
func (ep *endpoint) remove(ctx context.Context, p string, dir bool) error {
	if ep.local {
		return ep.inRoot(p, func(r *os.Root, rel string) error {
			if rel == "." {
				return errors.New("cannot delete the root")
			}
			return r.Remove(rel)
		})
	}
	return ep.withConn(ctx, func(c *client.Conn) error {
		if dir {
			return c.Rmdir(ctx, p)
		}
		return c.Delete(ctx, p)
	})
}

// checksum returns the verifyAlg checksum of the file p.
func (ep *endpoint) checksum(ctx context.Context, p string) (string, error) {
	var sum string
	if ep.local {
		err := ep.inRoot(p, func(r *os.Root, rel string) error {
			f, err := r.Open(rel)
			if err != nil {
				return err
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("%s is not a file", p)
			}
			sum, err = checksum.Compute(ctx, f, fi.Size(), 0, -1, verifyAlg)
			return err
		})
		return sum, err
	}
	err := ep.withConn(ctx, func(c *client.Conn) (err error) {
		sum, err = c.Checksum(ctx, verifyAlg, p, 0, -1)
		return err
	})
	return sum, err
}

// endpointOf returns u's endpoint id, or writes 404.
func (a *App) endpointOf(w http.ResponseWriter, r *http.Request, u *userState, id string) *endpoint {
	ep, err := a.endpointByID(r.Context(), u, id)
	switch {
	case errors.Is(err, errPinned):
		writeError(w, http.StatusNotFound, "endpoint "+err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "endpoints: "+err.Error())
	case ep == nil:
		writeError(w, http.StatusNotFound, "no such endpoint")
	}
	return ep
}

// endpointByID returns u's endpoint id, or nil: in site mode one another
// instance opened is read from the database (and kept).
func (a *App) endpointByID(ctx context.Context, u *userState, id string) (*endpoint, error) {
	u.mu.Lock()
	ep := u.endpoints[id]
	u.mu.Unlock()
	if ep != nil || a.site == nil || id == "" {
		return ep, nil
	}
	ep, err := a.loadEndpoint(ctx, u, id)
	if ep == nil || err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if e := u.endpoints[id]; e != nil {
		return e, nil
	}
	u.keepLocked(ep)
	return ep, nil
}

// keepLocked adds ep to u's endpoints, forgetting the oldest opened
// beyond maxEndpoints; u.mu must be held.
func (u *userState) keepLocked(ep *endpoint) {
	if len(u.endpoints) >= maxEndpoints {
		// Forget the oldest opened: panes only keep the last ones.
		var oldest *endpoint
		for _, e := range u.endpoints {
			if oldest == nil || e.opened.Before(oldest.opened) {
				oldest = e
			}
		}
		delete(u.endpoints, oldest.ID)
	}
	u.endpoints[ep.ID] = ep
}

func (a *App) openEndpoint(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	var req openRequest
	if !readJSON(w, r, &req) {
		return
	}
	ep, err := a.newEndpoint(r.Context(), u, req)
	if err != nil {
		err = confined(err)
		code := http.StatusBadGateway
		if errors.Is(err, errEscape) || errors.Is(err, errAddrDenied) {
			code = http.StatusForbidden
		}
		writeError(w, code, err.Error())
		return
	}
	ep.opened = time.Now()
	if a.site != nil {
		if err := a.site.saveEndpoint(r.Context(), u.name, ep); err != nil {
			writeError(w, http.StatusServiceUnavailable, "endpoints: "+err.Error())
			return
		}
	}
	u.mu.Lock()
	u.keepLocked(ep)
	u.mu.Unlock()
	writeJSON(w, http.StatusOK, ep)
}

func (a *App) listEndpoints(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	if a.site != nil {
		out, err := a.site.endpoints(r.Context(), u.name)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "endpoints: "+err.Error())
			return
		}
		slices.SortFunc(out, func(a, b *endpoint) int { return strings.Compare(a.Display, b.Display) })
		writeJSON(w, http.StatusOK, out)
		return
	}
	u.mu.Lock()
	out := make([]*endpoint, 0, len(u.endpoints))
	for _, ep := range u.endpoints {
		out = append(out, ep)
	}
	u.mu.Unlock()
	slices.SortFunc(out, func(a, b *endpoint) int { return strings.Compare(a.Display, b.Display) })
	writeJSON(w, http.StatusOK, out)
}

// opError writes err with a status that says whose fault it was.
func opError(w http.ResponseWriter, err error) {
	err = confined(err)
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, errEscape), errors.Is(err, errAddrDenied):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, fs.ErrPermission):
		writeError(w, http.StatusForbidden, err.Error())
	default:
		writeError(w, http.StatusBadGateway, err.Error())
	}
}

type listReply struct {
	Path    string  `json:"path"`
	Entries []entry `json:"entries"`
}

func (a *App) list(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	ep := a.endpointOf(w, r, u, r.URL.Query().Get("ep"))
	if ep == nil {
		return
	}
	p := r.URL.Query().Get("path")
	if err := checkText("path", p, maxPathBytes); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if p == "" {
		p = ep.Home
	}
	p = ep.clean(p)
	es, err := ep.list(r.Context(), p)
	if err != nil {
		opError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, listReply{Path: p, Entries: es})
}

type fileOpRequest struct {
	EP    string `json:"ep"`
	Dir   string `json:"dir"`
	Name  string `json:"name"`
	To    string `json:"to,omitempty"`    // rename: the new name
	IsDir bool   `json:"isDir,omitempty"` // delete: a directory
}

// fileOp serves an operation on one entry of an endpoint's directory:
// op's reply, or an empty object when it has none.
func (a *App) fileOp(w http.ResponseWriter, r *http.Request, u *userState, op func(ctx context.Context, ep *endpoint, req fileOpRequest) (any, error)) {
	var req fileOpRequest
	if !readJSON(w, r, &req) {
		return
	}
	ep := a.endpointOf(w, r, u, req.EP)
	if ep == nil {
		return
	}
	if err := checkName(req.Name); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req.Dir = ep.clean(req.Dir)
	reply, err := op(r.Context(), ep, req)
	if err != nil {
		opError(w, err)
		return
	}
	if reply == nil {
		reply = struct{}{}
	}
	writeJSON(w, http.StatusOK, reply)
}

func (a *App) mkdir(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	a.fileOp(w, r, u, func(ctx context.Context, ep *endpoint, req fileOpRequest) (any, error) {
		return nil, ep.mkdir(ctx, ep.join(req.Dir, req.Name))
	})
}

func (a *App) rename(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	a.fileOp(w, r, u, func(ctx context.Context, ep *endpoint, req fileOpRequest) (any, error) {
		if err := checkName(req.To); err != nil {
			return nil, badRequest{err}
		}
		return nil, ep.rename(ctx, ep.join(req.Dir, req.Name), ep.join(req.Dir, req.To))
	})
}

func (a *App) remove(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	a.fileOp(w, r, u, func(ctx context.Context, ep *endpoint, req fileOpRequest) (any, error) {
		return nil, ep.remove(ctx, ep.join(req.Dir, req.Name), req.IsDir)
	})
}
