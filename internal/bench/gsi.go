package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/gsi"
)

// The test PKI of the GSI workload.
const (
	gsiOrg    = "/C=US/O=FerryBench"
	gsiUserDN = gsiOrg + "/OU=users/CN=Ferry Bench User"
	gsiHostDN = gsiOrg + "/OU=hosts/CN=localhost"
	// gsiAccount is the local account the grid-mapfile maps the user to
	// when the benchmark runs as root (GCT refuses to map to root); it is
	// created with useradd if missing, as the tests' gsipki does.
	gsiAccount = "ferrygsi"
	gsiBits    = 2048
)

// gsiSetup is the GSI workload's credentials, in scratch/gsi: a CA in a
// trust directory of GCT's layout, a host credential for localhost and
// 127.0.0.1, a user's proxy and a grid-mapfile mapping the user to a
// local account.
type gsiSetup struct {
	dir, trustDir     string
	hostCert, hostKey string
	gridMap           string
	proxyFile         string
	account           string

	proxy *gsi.Credential
	trust *gsi.TrustStore
}

// makeGSI makes the PKI in the scratch directory, once. Everything but
// the private keys is readable by all: GCT's session processes read the
// trust directory again after switching to the mapped account.
func (r *runner) makeGSI() error {
	if r.gsi != nil {
		return nil
	}
	fmt.Fprintf(r.progress, "bench: making a test PKI, a proxy and a grid-mapfile\n")
	g, err := newGSISetup(filepath.Join(r.scratch, "gsi"))
	if err != nil {
		return fmt.Errorf("bench: GSI set-up: %w", err)
	}
	r.gsi = g
	return nil
}

func newGSISetup(dir string) (*gsiSetup, error) {
	account, err := gsiMappedAccount()
	if err != nil {
		return nil, err
	}
	g := &gsiSetup{dir: dir, trustDir: filepath.Join(dir, "certificates"), account: account,
		gridMap: filepath.Join(dir, "grid-mapfile"), proxyFile: filepath.Join(dir, "x509up")}
	for _, d := range []string{dir, g.trustDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, err
		}
	}
	ca, err := newGSICA(g.trustDir)
	if err != nil {
		return nil, err
	}
	g.hostCert, g.hostKey = filepath.Join(dir, "hostcert.pem"), filepath.Join(dir, "hostkey.pem")
	host, err := ca.Issue(gsi.HostCert, gsiHostDN, gsi.IssueOptions{Bits: gsiBits, Hosts: []string{"localhost", "127.0.0.1"}})
	if err != nil {
		return nil, err
	}
	if err := gsi.WriteCredential(g.hostCert, g.hostKey, host); err != nil {
		return nil, err
	}
	userCred, err := ca.Issue(gsi.UserCert, gsiUserDN, gsi.IssueOptions{Bits: gsiBits})
	if err != nil {
		return nil, err
	}
	if err := gsi.WriteCredential(filepath.Join(dir, "usercert.pem"), filepath.Join(dir, "userkey.pem"), userCred); err != nil {
		return nil, err
	}
	if g.proxy, err = gsi.NewProxy(userCred, gsi.ProxyOptions{Lifetime: 24 * time.Hour, Bits: gsiBits}); err != nil {
		return nil, err
	}
	if err := gsi.WriteProxyFile(g.proxyFile, g.proxy); err != nil {
		return nil, err
	}
	if err := writeMode(g.gridMap, []byte(gsi.GridMapLine(gsiUserDN, account)+"\n"), 0o644); err != nil {
		return nil, err
	}
	if g.trust, err = gsi.LoadTrustDir(g.trustDir); err != nil {
		return nil, err
	}
	return g, nil
}

// gsiMappedAccount returns the account to map the user to: gsiAccount,
// created if needed, when running as root; else the current user, whom an
// unprivileged GCT server can serve.
func gsiMappedAccount() (string, error) {
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return "", err
		}
		return u.Username, nil
	}
	var lastErr error
	for attempt := range 10 {
		if u, err := user.Lookup(gsiAccount); err == nil {
			if u.Uid == "0" {
				return "", fmt.Errorf("account %s is root; GCT refuses to map to root", gsiAccount)
			}
			return gsiAccount, nil
		}
		// A test may be adding it at the same time: retry.
		out, err := exec.Command("useradd", "--system", "--create-home", "--shell", "/bin/sh", gsiAccount).CombinedOutput()
		if err == nil {
			continue
		}
		lastErr = fmt.Errorf("useradd %s: %v: %s", gsiAccount, err, strings.TrimSpace(string(out)))
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond)
	}
	return "", fmt.Errorf("cannot create the local account %s: %w", gsiAccount, lastErr)
}

// newGSICA makes a CA valid for a month, with a random suffix in its DN,
// and its entries in trustDir (hashed certificate, signing policy, empty
// CRL).
func newGSICA(trustDir string) (*gsi.CA, error) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	ca, err := gsi.NewCA(gsiOrg+"/CN=FerryBench CA "+hex.EncodeToString(suffix),
		gsi.IssueOptions{Bits: gsiBits, NotAfter: time.Now().AddDate(0, 1, 0)})
	if err != nil {
		return nil, err
	}
	if err := ca.WriteTrustDir(trustDir); err != nil {
		return nil, err
	}
	return ca, ca.WriteCRL(trustDir)
}

// writeMode writes a new file with exactly mode, whatever the umask.
func writeMode(name string, data []byte, mode os.FileMode) error {
	if err := os.WriteFile(name, data, mode); err != nil {
		return err
	}
	return os.Chmod(name, mode)
}

// gsiEnv returns this process's environment without the GSI variables,
// plus vars: neither side may pick up the caller's credentials (GCT
// prefers X509_USER_CERT to the proxy).
func gsiEnv(vars ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(k, "X509_") || k == "GRIDMAP" || strings.HasPrefix(k, "GLOBUS_GSSAPI_")
	})
	return append(env, vars...)
}

// clientEnv is the environment of the GSI clients.
func (g *gsiSetup) clientEnv() []string {
	return gsiEnv("X509_USER_PROXY="+g.proxyFile, "X509_CERT_DIR="+g.trustDir)
}

// serverEnv is the environment of the GSI servers.
func (g *gsiSetup) serverEnv() []string {
	return gsiEnv("X509_USER_CERT="+g.hostCert, "X509_USER_KEY="+g.hostKey,
		"X509_CERT_DIR="+g.trustDir, "GRIDMAP="+g.gridMap)
}

// logins times cfg.Logins GSI logins per implementation (Ferry's and
// GCT's servers, the same Ferry client library), without and then with
// delegation, alternating the implementations login by login. One
// untimed login per server and case comes first, so that no one-time
// start-up cost counts.
func (r *runner) logins(ctx context.Context) ([]Sample, error) {
	var impls []Impl
	for _, i := range r.cfg.Impls {
		if i != Raw {
			impls = append(impls, i)
		}
	}
	var samples []Sample
	for _, row := range []Workload{GSILogin, GSILoginDeleg} {
		times := map[Impl][]float64{}
		for n := 0; n <= r.cfg.Logins; n++ {
			for _, impl := range impls {
				if err := context.Cause(ctx); ctx.Err() != nil {
					return samples, err
				}
				d, err := r.login(ctx, impl, row == GSILoginDeleg)
				if err != nil {
					return samples, fmt.Errorf("%s %d %s: %w", row, n, impl, err)
				}
				if n == 0 {
					continue // the warm-up
				}
				samples = append(samples, Sample{Workload: row, Impl: impl, Rep: n, Wall: d})
				times[impl] = append(times[impl], ms(d))
			}
		}
		for _, impl := range impls {
			s := Summarize(times[impl])
			fmt.Fprintf(r.progress, "bench: %-15s %-5s %7.1f ms median of %d (%.1f–%.1f)\n", row, impl, s.Median, s.N, s.Min, s.Max)
		}
	}
	// GCT's session processes must be gone before the next runs measure
	// its server's CPU time.
	for _, impl := range impls {
		if err := r.waitSessions(ctx, impl); err != nil {
			return samples, err
		}
	}
	return samples, nil
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loginTimeout bounds one login.
const loginTimeout = 30 * time.Second

// login connects to impl's GSI server with the Ferry client library,
// authenticates (AUTH GSSAPI, ADAT...) with or without delegation, and
// sends USER :globus-mapping:. It returns the time from before the
// connect to the 230 reply, then quits.
func (r *runner) login(ctx context.Context, impl Impl, deleg bool) (time.Duration, error) {
	srv, err := r.server(ctx, impl, GSILogin)
	if err != nil {
		return 0, err
	}
	if err := srv.alive(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	cfg := &client.Config{DialTimeout: loginTimeout, GSI: &client.GSIConfig{
		Credential: r.gsi.proxy, Trust: r.gsi.trust, NoDelegation: !deleg}}
	start := time.Now()
	c, err := client.Dial(ctx, net.JoinHostPort("127.0.0.1", itoa(srv.port)), cfg)
	if err != nil {
		return 0, errors.Join(err, srv.alive())
	}
	defer c.Close()
	rep, err := c.Do(ctx, "USER %s", client.GlobusMapping)
	if err == nil && (rep.Code == 331 || rep.Code == 332) {
		rep, err = c.Do(ctx, "PASS dummy")
	}
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if rep.Code != 230 {
		return 0, fmt.Errorf("bench: login refused: %d %s", rep.Code, strings.Join(rep.Lines, " "))
	}
	if _, _, gotDeleg := c.GSI(); gotDeleg != deleg {
		return 0, fmt.Errorf("bench: delegated %v, want %v", gotDeleg, deleg)
	}
	if err := c.Quit(ctx); err != nil {
		return 0, err
	}
	return d, nil
}

// waitSessions waits until impl's GSI server has no session processes
// (GCT forks one per connection).
func (r *runner) waitSessions(ctx context.Context, impl Impl) error {
	srv := r.servers[serverRole(impl, GSI)]
	if impl != GCT || srv == nil {
		return nil
	}
	deadline := time.Now().Add(sessionExit)
	for {
		pids, err := children(srv.pid)
		if err != nil || len(pids) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s: session processes %v still running %v after the logins", srv.name, pids, sessionExit)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// gsiServerArgs returns the program, arguments and environment of impl's
// GSI server: ferry serve with null storage, or globus-gridftp-server
// with no configuration file, as root mapping the user through the
// grid-mapfile.
func (r *runner) gsiServerArgs(impl Impl) (path string, args, env []string) {
	switch impl {
	case Ferry:
		return r.cfg.Ferry, []string{"serve", "-listen", "127.0.0.1:0", "-storage", "null",
			"-cert", r.gsi.hostCert, "-key", r.gsi.hostKey, "-gridmap", r.gsi.gridMap,
			"-log-level", "warn", "-shutdown-grace", "2s"}, r.gsi.serverEnv()
	case GCT:
		return r.gctServer, []string{"-c", "/dev/null", "-p", "0",
			"-control-interface", "127.0.0.1", "-data-interface", "127.0.0.1",
			"-disable-usage-stats"}, r.gsi.serverEnv()
	}
	return "", nil, nil
}
