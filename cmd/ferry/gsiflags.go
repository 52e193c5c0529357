package main

// GSI (gsiftp://) options of the client subcommands.

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
)

// gsiHelp explains ftps:// and gsiftp:// for the subcommands' help.
const gsiHelp = `
ftps://[user[:password]@]host[:port]/path (port 21 by default) is explicit
FTPS (RFC 4217): AUTH TLS before the login, then encrypted data channels
(PROT P); a server that refuses TLS fails the command, nothing goes in
clear. The server's certificate must chain to the system's CAs or to the
trust directory ($X509_CERT_DIR, as below) and name the URL's host (or -ss
SUBJECT). The login is the URL's, ~/.netrc's or anonymous, as for ftp://;
-cert FILE presents a client certificate (a proxy too), which the server
maps through its grid-mapfile when the URL has no user. Implicit FTPS (port
990) is not supported.

gsiftp://host[:port]/path (port 2811 by default) authenticates with GSI: the
server's certificate is checked against the trust directory ($X509_CERT_DIR,
else /etc/grid-security/certificates) and the URL's host (or -ss SUBJECT),
the client presents its proxy ($X509_USER_PROXY, else /tmp/x509up_u<uid>,
else $X509_USER_CERT/$X509_USER_KEY or ~/.globus/usercert.pem; -cert/-key
pick a file) and delegates a limited proxy to the server (-nodelegate: do
not), and the login is mapped through the server's grid-mapfile (a user in
the URL asks for that account).
`

// gsiDataHelp explains the data channel flags.
const gsiDataHelp = `Data channels of gsiftp:// are authenticated (DCAU A, both ends present
the user's credential) unless -nodcau; -dcsafe adds integrity protection
(PROT S), -dcpriv encryption (PROT P). -data-cred FILE|auto sends each
server a data channel credential (GCT's DCSC; auto: a generated
self-signed one): both ends then present it, and only it is accepted, so
servers that do not trust each other's CA can copy between them.
`

// gsiFlags are the GSI options of a client subcommand, and the credential
// and trust store they lead to, loaded once on first use.
type gsiFlags struct {
	noDCAU, dcSafe, dcPriv bool
	subject                string
	noDelegate             bool
	cert, key              string
	dataCred               string // -data-cred: PATH or auto (DCSC)

	// plainPeer: third-party copies between a gsiftp:// server and one
	// without GSI run with DCAU N on the gsiftp:// side (mixedThirdParty).
	plainPeer bool

	once sync.Once
	cfg  *client.GSIConfig
	err  error

	krb krbFlags // Kerberos (krbflags.go)

	ftpsOnce sync.Once // ftpsConfig's loading (ftps.go)
	ftpsCfg  *client.FTPSConfig
	ftpsErr  error
}

// register defines the flags on fs; data adds the data channel flags.
func (g *gsiFlags) register(fs *flag.FlagSet, data bool) {
	fs.StringVar(&g.subject, "ss", "", "gsiftp, ftps: the server's expected certificate subject `DN`, instead of checking the host name")
	noDelegate := "gsiftp: do not delegate a proxy to the server"
	if data {
		noDelegate += " (a GCT server then cannot authenticate data channels: add -nodcau)"
	}
	fs.BoolVar(&g.noDelegate, "nodelegate", false, noDelegate)
	fs.StringVar(&g.cert, "cert", "", "gsiftp: credential `FILE` (a proxy, or a certificate with -key) instead of the default proxy; ftps: present it as TLS client certificate")
	fs.StringVar(&g.key, "key", "", "gsiftp, ftps: private key `FILE` for -cert (default: -cert itself)")
	g.krb.register(fs)
	if data {
		fs.BoolVar(&g.noDCAU, "nodcau", false, "gsiftp: no data channel authentication (DCAU N): data connections are plain TCP")
		fs.BoolVar(&g.dcSafe, "dcsafe", false, "gsiftp: integrity-protected data channels (PROT S)")
		fs.BoolVar(&g.dcPriv, "dcpriv", false, "gsiftp: encrypted data channels (PROT P)")
	}
}

// check validates the flags, before anything is dialed.
func (g *gsiFlags) check() error {
	if g == nil {
		return nil
	}
	if g.noDCAU && (g.dcSafe || g.dcPriv) {
		return usagef("-dcsafe and -dcpriv need data channel authentication; drop -nodcau")
	}
	if g.dcSafe && g.dcPriv {
		return usagef("give -dcsafe or -dcpriv, not both")
	}
	if g.key != "" && g.cert == "" {
		return usagef("-key needs -cert")
	}
	if g.dataCred != "" && g.noDCAU {
		return usagef("-data-cred is the credential of authenticated data channels; drop -nodcau")
	}
	return g.krb.check()
}

// config returns the client's GSIConfig for a gsiftp:// location: the
// credential and trust store are loaded on the first call.
func (g *gsiFlags) config() (*client.GSIConfig, error) {
	g.once.Do(func() { g.cfg, g.err = g.load() })
	if g.err != nil {
		return nil, g.err
	}
	c := *g.cfg
	c.PlainPeerNoDCAU = g.plainPeer
	return &c, nil
}

func (g *gsiFlags) load() (*client.GSIConfig, error) {
	var cred *client.Credential
	var err error
	if g.cert != "" {
		if cred, err = client.LoadCredential(g.cert, g.key); err != nil {
			return nil, fmt.Errorf("gsiftp: credential from -cert: %w", err)
		}
	} else {
		if cred, _, err = client.FindCredential(); err != nil {
			// The error names the file (and the variable) used.
			return nil, fmt.Errorf("gsiftp: %w", err)
		}
	}
	dir := client.TrustDir()
	trust, err := client.LoadTrustStore(dir)
	if err != nil {
		return nil, fmt.Errorf("gsiftp: %w (set X509_CERT_DIR to the directory of trusted CA certificates)", err)
	}
	cfg := &client.GSIConfig{
		Credential:    cred,
		Trust:         trust,
		ServerSubject: g.subject,
		NoDelegation:  g.noDelegate,
	}
	switch {
	case g.dataCred == "":
	case strings.EqualFold(g.dataCred, "auto"):
		if cfg.DataCredential, err = client.NewDataCredential(); err != nil {
			return nil, fmt.Errorf("gsiftp: -data-cred auto: %w", err)
		}
	default:
		if cfg.DataCredential, err = client.LoadDataCredential(g.dataCred); err != nil {
			return nil, fmt.Errorf("gsiftp: -data-cred: %w", err)
		}
	}
	switch {
	case g.noDCAU:
		cfg.DataAuth = client.DataAuthNone
	case g.dcSafe:
		cfg.Protection = client.ProtSafe
	case g.dcPriv:
		cfg.Protection = client.ProtPrivate
	}
	return cfg, nil
}

// mixedThirdParty handles third-party copies between a plain ftp://
// server and a gsiftp:// one. The ftp:// server has no credential, so the
// gsiftp:// server cannot authenticate its data connection (DCAU A would
// fail in the TLS handshake): as globus-url-copy sets DCAU only on the
// gsiftp:// side, where it then breaks, a user of either expects the copy
// to work with the one setting that can. So those copies, and only
// those, run with DCAU N on their gsiftp:// side (the client sends DCAU N
// before each and DCAU A after it: client.GSIConfig.PlainPeerNoDCAU); the
// other pairs of the run keep data channel authentication, and w hears
// about it. -dcsafe and -dcpriv need DCAU: they are refused.
//
// -data-cred is refused for a pair with a server that is not gsiftp://:
// its data channels could not use the credential, and going on without it
// would not be what was asked for.
func (g *gsiFlags) mixedThirdParty(w io.Writer, pairs []job.URLPair, noTPT bool) error {
	if g != nil && g.dataCred != "" {
		for _, p := range pairs {
			for _, u := range []string{p.Src, p.Dst} {
				if l, err := parseLocation(u); err == nil && l.kind == locRemote && !l.gsi {
					return usagef("%s: -data-cred is for gsiftp:// servers (the data channel credential goes with GSI's DCAU)", l)
				}
			}
		}
	}
	if g == nil || g.noDCAU || noTPT {
		return nil
	}
	var first string
	n := 0
	for _, p := range pairs {
		src, err1 := parseLocation(p.Src)
		dst, err2 := parseLocation(p.Dst)
		if err1 != nil || err2 != nil || src.kind != locRemote || dst.kind != locRemote || src.gsi == dst.gsi {
			continue
		}
		if g.dcSafe || g.dcPriv {
			return usagef("%s to %s: -dcsafe and -dcpriv need data channel authentication, which a server without GSI cannot do", src, dst)
		}
		if n == 0 {
			first = fmt.Sprintf("%s to %s", src, dst)
		}
		n++
	}
	if n == 0 {
		return nil
	}
	g.plainPeer = true
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (and %d more such pairs)", n-1)
	}
	fmt.Fprintf(w, "ferry: note: %s%s is between a gsiftp:// server and one without GSI: its data channels are not authenticated (DCAU N, as with -nodcau); the other copies keep DCAU\n", first, more)
	return nil
}
