package dcsec

import (
	"crypto/x509"
	"errors"
	"testing"
)

// TestNilVerifyPeerRefused: where checking the peer is a security decision
// (GSI style, either end; any TLS client), a Config without VerifyPeer is
// refused before a byte is exchanged, instead of accepting whoever is
// there. A stranger (Bob) offering a valid certificate of the same CA
// would otherwise be taken for the peer.
func TestNilVerifyPeerRefused(t *testing.T) {
	f := getFixture(t)
	for _, level := range []Level{Clear, Safe, Private} {
		// The listener forgot its check; Bob connects.
		lcfg := f.gsiCfg(level, f.aliceDelegate)
		lcfg.VerifyPeer = nil
		bob := f.gsiCfg(level, f.bob)
		bob.VerifyPeer = func([]*x509.Certificate) error { return nil }
		c, l := secureBoth(t, bob, lcfg)
		if l.c != nil || l.err == nil {
			t.Errorf("GSI %v listener without VerifyPeer accepted a peer", level)
		}
		if c.c != nil {
			c.c.Close()
		}
		// The connector forgot its check; Bob listens.
		ccfg := f.gsiCfg(level, f.alice)
		ccfg.VerifyPeer = nil
		c, l = secureBoth(t, ccfg, bob)
		if c.c != nil || c.err == nil {
			t.Errorf("GSI %v connector without VerifyPeer accepted a peer", level)
		}
		if l.c != nil {
			l.c.Close()
		}
	}
	// An FTPS client must check the server's certificate.
	srv := &Config{Style: FTPS, Level: Private, Server: true, Certificate: certOf(f.bob)}
	c, l := secureBoth(t, &Config{Style: FTPS, Level: Private}, srv)
	if c.c != nil || c.err == nil {
		t.Errorf("FTPS client without VerifyPeer accepted the server")
	}
	if l.c != nil {
		l.c.Close()
	}
}

// TestAuthenticatesPeer: only a TLS data channel with a peer check proves
// who the peer is.
func TestAuthenticatesPeer(t *testing.T) {
	check := func([]*x509.Certificate) error { return errors.New("no") }
	for _, tc := range []struct {
		name string
		cfg  *Config
		want bool
	}{
		{"nil (DCAU N)", nil, false},
		{"GSI A", &Config{Style: GSI, Level: Clear, VerifyPeer: check}, true},
		{"GSI P", &Config{Style: GSI, Level: Private, VerifyPeer: check}, true},
		{"GSI without check", &Config{Style: GSI, Level: Private}, false},
		{"FTPS PROT P server", &Config{Style: FTPS, Level: Private, Server: true}, false},
		{"FTPS PROT C with check", &Config{Style: FTPS, Level: Clear, VerifyPeer: check}, false},
		{"FTPS PROT P with check", &Config{Style: FTPS, Level: Private, VerifyPeer: check}, true},
	} {
		if got := tc.cfg.AuthenticatesPeer(); got != tc.want {
			t.Errorf("%s: AuthenticatesPeer %v, want %v", tc.name, got, tc.want)
		}
	}
}
