package client

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
)

// dataSecurity is the dcsec configuration of a GSI session's data
// connections, or nil for DCAU N (plain TCP).
func (g *gsiState) dataSecurity(handshakeTimeout time.Duration) *dcsec.Config {
	if !g.dcau {
		return nil
	}
	lo, hi := g.cfg.tlsVersions()
	if dc := g.cfg.DataCredential; dc != nil {
		cert := dc.TLSCertificate()
		return &dcsec.Config{
			Style:            dcsec.GSI,
			Level:            dcsec.Level(g.prot),
			Certificate:      &cert,
			VerifyPeer:       dcsec.DataCredentialAuthorization(dc, ""),
			MinVersion:       lo,
			MaxVersion:       hi,
			HandshakeTimeout: handshakeTimeout,
		}
	}
	return &dcsec.Config{
		Style:            dcsec.GSI,
		Level:            dcsec.Level(g.prot),
		Certificate:      &g.cert,
		VerifyPeer:       dcsec.SelfAuthorization(g.cfg.Trust, g.identity),
		MinVersion:       lo,
		MaxVersion:       hi,
		HandshakeTimeout: handshakeTimeout,
	}
}

// plainPeerDCAU prepares a third-party transfer between src and dst
// when one has GSI with authenticated data channels and asks for
// GSIConfig.PlainPeerNoDCAU, and the other has no GSI: it sends DCAU N
// to the GSI side and returns the function that sets DCAU A back once
// the transfer is over (nil when nothing changed). That function closes
// the Conn when it cannot, so that no later transfer runs with DCAU N.
// DCAU makes a server forget its cached data connections, so both
// changes forget them here too.
func plainPeerDCAU(ctx context.Context, src, dst *Conn) (restore func(), err error) {
	c, peer := src, dst
	if c.gsi == nil {
		c, peer = dst, src
	}
	if c.gsi == nil || peer.gsi != nil {
		return nil, nil
	}
	g := c.gsi
	if !g.cfg.PlainPeerNoDCAU || !g.dcau || g.prot == ProtSafe || g.prot == ProtPrivate {
		return nil, nil
	}
	if _, err := c.expect(ctx, 2, "DCAU N"); err != nil {
		return nil, fmt.Errorf("client: DCAU N for a third party with a server without GSI: %w", err)
	}
	c.log.Debug("third party with a server without GSI: DCAU N for this transfer")
	g.dcau, c.dsec = false, nil
	c.dropCache()
	return func() {
		if c.err != nil {
			return
		}
		c.dropCache()
		err := context.Cause(ctx)
		if err == nil {
			if _, err = c.expect(ctx, 2, "DCAU A"); err == nil {
				g.dcau = true
				c.dsec = g.dataSecurity(c.dialTimeout())
				return
			}
		}
		c.log.Debug("DCAU A after a third party with a server without GSI: not set back, closing", "err", err)
		c.close()
	}, nil
}

// secureData runs data channel authentication (DCAU A, with PROT C, S or
// P) on a new data connection, as its TLS client when connector (we
// dialed it) or its TLS server, when the session has DCAU; with FTPS
// (PROT P) it is always the TLS client. Otherwise it returns nc. On
// failure nc is closed.
func (c *Conn) secureData(ctx context.Context, nc net.Conn, connector bool) (net.Conn, error) {
	if c.dsec == nil {
		return nc, nil
	}
	if c.dsec.Style == dcsec.FTPS {
		sc, err := dcsec.Secure(ctx, markFTPS(nc), connector, c.dsec)
		if err != nil {
			return nil, fmt.Errorf("client: FTPS data channel (PROT P): %w", err)
		}
		return sc, nil
	}
	sc, err := dcsec.Secure(ctx, nc, connector, c.dsec)
	if err != nil {
		return nil, fmt.Errorf("client: data channel authentication (DCAU A, PROT %c): %w", byte(c.dsec.Level), err)
	}
	return sc, nil
}

// closeData ends a data connection after a successful transfer: a
// sender's end of the stream is a bare FIN, also under TLS (GCT expects
// no close_notify), except on FTPS data connections, which end with
// close_notify first (RFC 4217).
func closeData(dc net.Conn, sender bool) error {
	var err error
	if sender {
		err = dcsec.CloseWrite(dc, dataStyle(dc))
	}
	if cerr := dcsec.NetConn(dc).Close(); err == nil {
		err = cerr
	}
	return err
}
