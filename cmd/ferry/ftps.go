package main

// FTPS (ftps://, explicit AUTH TLS) options of the client subcommands.

import (
	"fmt"
	"os"

	"github.com/ferrygrid/ferry/client"
)

// ftpsLogin returns the FTPS configuration and the login of an ftps://
// location: the URL's, ~/.netrc's or anonymous credentials, or with a
// client certificate (-cert) and no user in the URL, the server's
// grid-mapfile mapping (empty user and password).
func ftpsLogin(l location, g *gsiFlags, getenv func(string) string) (cfg *client.FTPSConfig, user, pass string, err error) {
	if g == nil {
		g = &gsiFlags{}
	}
	if cfg, err = g.ftpsConfig(); err != nil {
		return nil, "", "", err
	}
	if cfg.Certificate != nil && !l.hasUser {
		return cfg, "", "", nil
	}
	if user, pass, err = credentials(l, getenv); err != nil {
		return nil, "", "", err
	}
	return cfg, user, pass, nil
}

// ftpsConfig returns the client's FTPSConfig, loading the trust directory
// and the -cert credential on the first call. The trust directory is
// optional (the system's CAs may be enough) unless $X509_CERT_DIR names
// it. There is deliberately no way to skip the server's verification.
func (g *gsiFlags) ftpsConfig() (*client.FTPSConfig, error) {
	g.ftpsOnce.Do(func() { g.ftpsCfg, g.ftpsErr = g.loadFTPS() })
	if g.ftpsErr != nil {
		return nil, g.ftpsErr
	}
	c := *g.ftpsCfg
	return &c, nil
}

func (g *gsiFlags) loadFTPS() (*client.FTPSConfig, error) {
	cfg := &client.FTPSConfig{ServerSubject: g.subject}
	dir := client.TrustDir()
	trust, err := client.LoadTrustStore(dir)
	switch {
	case err == nil:
		cfg.Trust = trust
	case os.Getenv("X509_CERT_DIR") != "" || g.subject != "":
		return nil, fmt.Errorf("ftps: %w (X509_CERT_DIR names the directory of trusted CA certificates)", err)
	}
	if g.cert != "" {
		if cfg.Certificate, err = client.LoadCredential(g.cert, g.key); err != nil {
			return nil, fmt.Errorf("ftps: client certificate from -cert: %w", err)
		}
	}
	return cfg, nil
}
