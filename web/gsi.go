package web

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/transfer"
)

// GSI: each user has at most one proxy credential, kept in memory only
// (never on disk), made here from their certificate and key (the key and
// its passphrase are dropped as soon as the proxy is signed) or uploaded.
// gsiftp:// endpoints and copies authenticate with it.

// proxyWarning is how long before its end a proxy is shown as expiring.
const proxyWarning = time.Hour

type credRequest struct {
	// Proxy is an uploaded proxy file (PEM: certificate, key, chain).
	Proxy string `json:"proxy,omitempty"`
	// Cert and Key are the user's certificate and key (PEM), Passphrase
	// the key's, Hours the proxy's lifetime (0: 12 hours).
	Cert       string  `json:"cert,omitempty"`
	Key        string  `json:"key,omitempty"`
	Passphrase string  `json:"passphrase,omitempty"`
	Hours      float64 `json:"hours,omitempty"`
}

type credReply struct {
	Identity    string    `json:"identity"`
	Subject     string    `json:"subject"`
	NotAfter    time.Time `json:"notAfter"`
	SecondsLeft float64   `json:"secondsLeft"`
	Expiring    bool      `json:"expiring"` // less than an hour left
}

func credInfo(c *gsi.Credential, now time.Time) credReply {
	leaf := c.Leaf()
	left := leaf.NotAfter.Sub(now)
	return credReply{Identity: c.Identity(), Subject: gsi.CertDN(leaf), NotAfter: leaf.NotAfter.UTC(),
		SecondsLeft: max(left.Seconds(), 0), Expiring: left < proxyWarning}
}

// errNoProxy and expiredError are what gsiftp:// gets without a usable
// proxy.
var errNoProxy = errors.New("no proxy: create one from your certificate and key, or upload one (GSI credential, above)")

func expiredError(c *gsi.Credential) error {
	na := c.Leaf().NotAfter
	return fmt.Errorf("your proxy expired at %s UTC (%s ago): create or upload a new one",
		na.UTC().Format("2006-01-02 15:04:05"), time.Since(na).Round(time.Second))
}

// credential returns u's proxy if it is valid now.
func (u *userState) credential() (*gsi.Credential, error) {
	u.mu.Lock()
	c := u.cred
	u.mu.Unlock()
	if c == nil {
		return nil, errNoProxy
	}
	if time.Now().After(c.Leaf().NotAfter) {
		return nil, expiredError(c)
	}
	return c, nil
}

// dial connects and logs in to the server of l as u: with u's proxy for
// gsiftp://, else with the URL's user and password, or anonymously.
func (a *App) dial(ctx context.Context, u *userState, l transfer.Location) (*client.Conn, error) {
	cfg := &client.Config{}
	if l.GSI {
		cred, err := u.credential()
		if err != nil {
			return nil, err
		}
		if a.trust == nil {
			return nil, errors.New("gsiftp:// needs a trust directory (ferry web -certdir)")
		}
		cfg.GSI = &client.GSIConfig{Credential: cred, Trust: a.trust}
	}
	// The host is resolved once and its address checked against the
	// network policy; data connections go only to that address.
	nc, peer, err := a.dialControl(ctx, l.Addr)
	if errors.Is(err, errAddrDenied) {
		return nil, fmt.Errorf("connect to %s: %w", l.Addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %v", l.Addr, transfer.Describe(err))
	}
	cfg.DataAddrPolicy = func(ap netip.AddrPort) error {
		if ap.Addr().Unmap().WithZone("") != peer.WithZone("") {
			return fmt.Errorf("the server sent %v, not its own address %v: %w", ap.Addr(), peer, errAddrDenied)
		}
		return a.checkAddr(ap)
	}
	if cfg.GSI != nil {
		if host, _, err := net.SplitHostPort(l.Addr); err == nil {
			cfg.GSI.ServerName = host
		}
	}
	gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := client.NewConn(gctx, nc, cfg)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %v", l.Addr, transfer.Describe(err))
	}
	user, pass := l.User, l.Pass
	if !l.HasUser && !l.GSI {
		user, pass = "anonymous", "ferry@"
	}
	if err := c.Login(ctx, user, pass); err != nil {
		c.Close()
		who := user
		if who == "" {
			who = "your proxy's identity"
		}
		return nil, fmt.Errorf("login to %s as %s: %v", l.Addr, who, transfer.Describe(err))
	}
	return c, nil
}

// decryptKey returns the PEM of key without encryption: legacy
// "Proc-Type: 4,ENCRYPTED" keys (what grid-cert-request writes) are
// decrypted with the passphrase.
func decryptKey(key, passphrase string) ([]byte, error) {
	var out []byte
	rest := []byte(key)
	found := false
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if !strings.Contains(b.Type, "PRIVATE KEY") {
			continue
		}
		found = true
		switch {
		case b.Type == "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("PKCS#8-encrypted keys are not supported: convert it with openssl rsa -aes256, or upload a proxy")
		//lint:ignore SA1019 grid keys are in the legacy format
		case x509.IsEncryptedPEMBlock(b): //nolint:staticcheck
			if passphrase == "" {
				return nil, errors.New("the key is encrypted: give its passphrase")
			}
			der, err := x509.DecryptPEMBlock(b, []byte(passphrase)) //nolint:staticcheck
			if err != nil {
				return nil, errors.New("wrong passphrase for the key")
			}
			b = &pem.Block{Type: b.Type, Bytes: der}
		}
		out = append(out, pem.EncodeToMemory(b)...)
	}
	if !found {
		return nil, errors.New("no private key in the key")
	}
	return out, nil
}

// setCredential makes or takes the user's proxy.
func (a *App) setCredential(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	var req credRequest
	if !readJSON(w, r, &req) {
		return
	}
	now := time.Now()
	var cred *gsi.Credential
	switch {
	case req.Proxy != "":
		c, err := gsi.ParseCredentialPEM([]byte(req.Proxy))
		if err != nil {
			writeError(w, http.StatusBadRequest, "not a proxy file (PEM certificate, key and chain): "+err.Error())
			return
		}
		if now.After(c.Leaf().NotAfter) {
			writeError(w, http.StatusBadRequest, strings.Replace(expiredError(c).Error(), "your proxy", "this proxy", 1))
			return
		}
		cred = c
	case req.Cert != "" && req.Key != "":
		key, err := decryptKey(req.Key, req.Passphrase)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		issuer, err := gsi.ParseCredentialPEM(append([]byte(req.Cert+"\n"), key...))
		clear(key)
		if err != nil {
			writeError(w, http.StatusBadRequest, "certificate and key: "+err.Error())
			return
		}
		if now.After(issuer.Leaf().NotAfter) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("your certificate expired at %s UTC", issuer.Leaf().NotAfter.UTC().Format("2006-01-02 15:04:05")))
			return
		}
		hours := req.Hours
		if hours <= 0 {
			hours = 12
		}
		cred, err = gsi.NewProxy(issuer, gsi.ProxyOptions{Lifetime: time.Duration(min(hours, 24*30) * float64(time.Hour))})
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	default:
		writeError(w, http.StatusBadRequest, "give a proxy, or a certificate and its key")
		return
	}
	u.mu.Lock()
	u.cred = cred
	u.mu.Unlock()
	writeJSON(w, http.StatusOK, credInfo(cred, now))
}

func (a *App) getCredential(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	u.mu.Lock()
	c := u.cred
	u.mu.Unlock()
	if c == nil {
		writeError(w, http.StatusNotFound, errNoProxy.Error())
		return
	}
	writeJSON(w, http.StatusOK, credInfo(c, time.Now()))
}

func (a *App) dropCredential(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	u.mu.Lock()
	u.cred = nil
	u.mu.Unlock()
	writeJSON(w, http.StatusOK, struct{}{})
}
