package server

// Live reload of the login policy: the files a server reads to decide who
// may log in (host credential, trust directory with its CRLs, grid-mapfile)
// and the login hooks, swapped as one value that each new session and each
// login reads, so that running sessions and transfers are not touched.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/pi"
)

// loginPolicy is what decides logins; it is immutable once published in
// Server.policy, and replaced whole by Reload.
type loginPolicy struct {
	anonymous, anonymousWrite bool
	authenticate              func(ctx context.Context, user, password string) (*Account, error)
	authorizeCert             func(ctx context.Context, dn, user string) (*Account, error)

	// sec is nil when the server has no host credential; then neither
	// AUTH GSSAPI nor AUTH TLS is offered.
	sec                         *pi.Security
	hostCert, hostKey, trustDir string // the files sec was loaded from

	gridMapPath string
	// gridMap is the grid-mapfile last loaded from gridMapPath; nil until
	// one loaded, when gridMapErr says why (each login then tries again).
	gridMap    *gsi.GridMap
	gridMapErr error
}

// ReloadPartError is one part of a Reload that was refused: the server
// keeps what it had for that part.
type ReloadPartError struct {
	// Part names what was refused: "host credential", "trust directory",
	// "grid-mapfile".
	Part string
	// File is the file or directory that could not be used.
	File string
	Err  error
}

func (e *ReloadPartError) Error() string {
	return fmt.Sprintf("server: %s %s refused, the current one kept: %v", e.Part, e.File, e.Err)
}

func (e *ReloadPartError) Unwrap() error { return e.Err }

// Reload replaces the login policy of a running server with that of cfg:
// Anonymous, AnonymousWrite, Authenticate and AuthorizeCert are taken as
// they are; the host credential (HostCert, HostKey), the trust directory
// (TrustDir, with its signing policies and CRLs) and the grid-mapfile
// (GridMap) are read again from the files cfg names. Every other field of
// cfg is ignored: those need a new Server.
//
// New sessions use the new policy, and so does every login from then on
// (a certificate identity proved before the reload is checked again
// against the new trust directory); sessions already logged in, and their
// transfers, carry on.
//
// Each file is judged on its own: one that cannot be read or parsed, or a
// trust directory with a file it cannot use that the current one did not
// have, is refused and the server keeps what it had for that part, so a
// failed reload never loosens the policy. A grid-mapfile that no longer
// exists is not an error: it revokes every mapping (fail closed), with a
// warning in the log. A trust directory is also
// refused when a CA that had a CRL has none any more, or an older one
// (a lower CRL Number or an earlier ThisUpdate): that would bring revoked
// certificates back, and dropping a CRL needs a restart. The parts refused are returned
// as *ReloadPartError (joined); applied lists what was read again. A
// server started without a host credential cannot gain one, nor lose it,
// by Reload.
func (s *Server) Reload(cfg Config) (applied []string, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	old := s.policy.Load()
	p := *old
	p.anonymous, p.anonymousWrite = cfg.Anonymous, cfg.AnonymousWrite
	p.authenticate, p.authorizeCert = cfg.Authenticate, cfg.AuthorizeCert
	applied = append(applied, "login settings")
	var refused []error
	refuse := func(part, file string, err error) {
		refused = append(refused, &ReloadPartError{Part: part, File: file, Err: err})
	}
	// Kerberos alone (a keytab) sets sec without a host credential.
	hadCred := old.sec != nil && old.sec.Host != nil
	switch hasCred := cfg.HostCert != "" || cfg.HostKey != ""; {
	case !hadCred && hasCred:
		refuse("host credential", cfg.HostCert, errors.New("the server was started without one: offering GSI and TLS needs a restart"))
	case hadCred && !hasCred:
		refuse("host credential", old.hostCert, errors.New("the server was started with one: dropping GSI and TLS needs a restart"))
	case hadCred:
		sec := *old.sec
		if cred, err := gsi.LoadCredential(cfg.HostCert, cfg.HostKey); err != nil {
			refuse("host credential", cfg.HostCert, err)
		} else {
			sec.Host, p.hostCert, p.hostKey = cred, cfg.HostCert, cfg.HostKey
			applied = append(applied, "host credential")
		}
		dir := trustDir(cfg.TrustDir)
		if trust, err := loadTrust(dir, old.sec.Trust); err != nil {
			refuse("trust directory", dir, err)
		} else {
			sec.Trust, p.trustDir = trust, dir
			applied = append(applied, "trust directory")
		}
		p.sec = &sec
	}
	if hadCred && p.authorizeCert == nil {
		path := gridMapPath(cfg.GridMap)
		gm, err := gsi.LoadGridMap(path)
		if errors.Is(err, fs.ErrNotExist) {
			// Removing the file revokes every mapping it granted.
			s.log.Warn("reload: the grid-mapfile is gone: no certificate maps to an account until it is back and the server reloads", "file", path)
			gm, err = gsi.ParseGridMap(nil)
		}
		if err != nil {
			// Never worse than before: a map that loaded stays.
			if old.gridMap == nil {
				p.gridMapPath, p.gridMapErr = path, err
			}
			refuse("grid-mapfile", path, err)
		} else {
			p.gridMapPath, p.gridMap, p.gridMapErr = path, gm, nil
			applied = append(applied, "grid-mapfile")
		}
	}
	s.policy.Store(&p)
	return applied, errors.Join(refused...)
}

// loadTrust loads a trust directory for Reload: it is refused when it
// cannot be read, or when it holds a file it cannot use (a CA, signing
// policy or CRL that does not parse) that the current store, cur, did
// not already have trouble with; a CRL written halfway must not silently
// stand for the CA's list.
func loadTrust(dir string, cur *gsi.TrustStore) (*gsi.TrustStore, error) {
	ts, err := gsi.LoadTrustDir(dir)
	if err != nil {
		return nil, err
	}
	var known []string
	if cur != nil && cur.Dir() == dir {
		known = cur.Problems()
	}
	var fresh []string
	for _, p := range ts.Problems() {
		if !slices.Contains(known, p) {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		return nil, errors.New(strings.Join(fresh, "; "))
	}
	if err := crlRollback(cur, ts); err != nil {
		return nil, err
	}
	return ts, nil
}

// crlRollback refuses a new trust store, ts, that would un-revoke
// certificates the current one, cur, revokes: a CA (still trusted) whose
// CRL is gone, or whose CRL is older (a lower CRL Number, an earlier
// ThisUpdate) than the current one. Dropping a CRL on purpose needs a
// restart.
func crlRollback(cur, ts *gsi.TrustStore) error {
	if cur == nil {
		return nil
	}
	now := ts.CRLVersions()
	var errs []string
	for h, was := range cur.CRLVersions() {
		dn := ts.CADN(h)
		if dn == "" {
			continue // the CA itself is gone: nothing it signed verifies
		}
		switch v, has := now[h]; {
		case !has:
			errs = append(errs, fmt.Sprintf("the CRL of CA %s (%s) is gone: dropping a CRL needs a restart", dn, was.File))
		case v.Older(was):
			errs = append(errs, fmt.Sprintf("the CRL of CA %s (%s, issued %s) is older than the one in force (issued %s): refused, it could bring revoked certificates back",
				dn, v.File, v.ThisUpdate.UTC().Format(time.RFC3339), was.ThisUpdate.UTC().Format(time.RFC3339)))
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// newPolicy is the login policy of a new server.
func newPolicy(cfg *Config, sec *pi.Security) *loginPolicy {
	p := &loginPolicy{
		anonymous: cfg.Anonymous, anonymousWrite: cfg.AnonymousWrite,
		authenticate: cfg.Authenticate, authorizeCert: cfg.AuthorizeCert,
		sec: sec, hostCert: cfg.HostCert, hostKey: cfg.HostKey, trustDir: trustDir(cfg.TrustDir),
		gridMapPath: gridMapPath(cfg.GridMap),
	}
	if sec != nil && sec.Host != nil && cfg.AuthorizeCert == nil {
		p.gridMap, p.gridMapErr = loadGridMap(p.gridMapPath)
	}
	return p
}

// grid returns the grid-mapfile of the policy; until one has loaded, it
// is read at each call (and a missing or broken file refuses the login).
func (p *loginPolicy) grid() (*gsi.GridMap, error) {
	if p.gridMap != nil {
		return p.gridMap, nil
	}
	return loadGridMap(p.gridMapPath)
}

func loadGridMap(path string) (*gsi.GridMap, error) {
	gm, err := gsi.LoadGridMap(path)
	if err != nil {
		return nil, fmt.Errorf("grid-mapfile: %w", err)
	}
	return gm, nil
}

// recheckIdentity verifies again, against the current trust directory, a
// certificate identity a session proved before: a CA removed or a CRL
// that revokes it since then refuses the login.
func (p *loginPolicy) recheckIdentity(id *gsi.Identity) error {
	if id == nil || p.sec == nil || p.sec.Trust == nil {
		return nil
	}
	if _, err := p.sec.Trust.Verify(id.Chain, time.Now()); err != nil {
		return fmt.Errorf("%w: %s: %v", pi.ErrLoginDenied, id.DN, err)
	}
	return nil
}

func trustDir(dir string) string {
	if dir == "" {
		return gsi.TrustDir()
	}
	return dir
}

func gridMapPath(file string) string {
	switch {
	case file != "":
		return file
	case os.Getenv("GRIDMAP") != "":
		return os.Getenv("GRIDMAP")
	}
	return "/etc/grid-security/grid-mapfile"
}
