package main

// GSI (gsiftp://) options of the client subcommands.

import (
	"flag"
	"fmt"
	"sync"

	"github.com/ferrygrid/ferry/client"
)

// gsiHelp explains gsiftp:// for the subcommands' help.
const gsiHelp = `
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
(PROT S), -dcpriv encryption (PROT P).
`

// gsiFlags are the GSI options of a client subcommand, and the credential
// and trust store they lead to, loaded once on first use.
type gsiFlags struct {
	noDCAU, dcSafe, dcPriv bool
	subject                string
	noDelegate             bool
	cert, key              string

	once sync.Once
	cfg  *client.GSIConfig
	err  error
}

// register defines the flags on fs; data adds the data channel flags.
func (g *gsiFlags) register(fs *flag.FlagSet, data bool) {
	fs.StringVar(&g.subject, "ss", "", "gsiftp: the server's expected certificate subject (DN), instead of checking the host name")
	fs.BoolVar(&g.noDelegate, "nodelegate", false, "gsiftp: do not delegate a proxy to the server (a GCT server then cannot authenticate data channels: add -nodcau)")
	fs.StringVar(&g.cert, "cert", "", "gsiftp: credential file (a proxy, or a certificate with -key) instead of the default proxy")
	fs.StringVar(&g.key, "key", "", "gsiftp: private key file for -cert (default: -cert itself)")
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
	return nil
}

// config returns the client's GSIConfig for a gsiftp:// location: the
// credential and trust store are loaded on the first call.
func (g *gsiFlags) config() (*client.GSIConfig, error) {
	g.once.Do(func() { g.cfg, g.err = g.load() })
	if g.err != nil {
		return nil, g.err
	}
	c := *g.cfg
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
	case g.noDCAU:
		cfg.DataAuth = client.DataAuthNone
	case g.dcSafe:
		cfg.Protection = client.ProtSafe
	case g.dcPriv:
		cfg.Protection = client.ProtPrivate
	}
	return cfg, nil
}
