package client

// Data channel credentials (GCT's DCSC, globus-url-copy -data-cred): see
// GSIConfig.DataCredential.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/gsi"
)

// NewDataCredential makes a throw-away self-signed data channel
// credential, as globus-url-copy -data-cred auto does: subject
// "/C=US/CN=Globus DCSC Cert", an RSA 2048 key, SHA-256, valid for a week.
func NewDataCredential() (*Credential, error) {
	return dcsec.NewAutoDataCredential(time.Now())
}

// LoadDataCredential reads a data channel credential from a PEM file
// holding a certificate chain and its key (a proxy file, or a certificate
// with its key); globus-url-copy -data-cred PATH. The file must not be
// readable by others; the credential must be valid now and its key
// strong enough for a GCT peer.
func LoadDataCredential(path string) (*Credential, error) {
	cred, err := gsi.LoadCredential(path, "")
	if err != nil {
		return nil, fmt.Errorf("client: data channel credential %s: %w", path, err)
	}
	return checkDataCredential(cred)
}

// checkDataCredential applies the checks a server applies to DCSC P, so
// that a credential it would refuse fails before dialing.
func checkDataCredential(cred *Credential) (*Credential, error) {
	pem, err := dcsec.EncodeDataCredential(cred)
	if err != nil {
		return nil, err
	}
	out, err := dcsec.ParseDataCredential(pem, time.Now())
	clear(pem)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return out, nil
}

// sendDCSC hands the data channel credential to the server (DCSC P)
// before DCAU. A server that does not list DCSC in FEAT is not asked: the
// Conn fails, since its data channels could not authenticate.
func (c *Conn) sendDCSC(ctx context.Context, cred *Credential) error {
	if !c.hasFeature("DCSC") {
		return errors.New("client: the server does not take data channel credentials (no DCSC in its FEAT)")
	}
	pem, err := dcsec.EncodeDataCredential(cred)
	if err != nil {
		return err
	}
	blob := base64.StdEncoding.EncodeToString(pem)
	clear(pem)
	if _, err := c.expect(ctx, 2, "DCSC P %s", blob); err != nil {
		return fmt.Errorf("client: DCSC P (data channel credential): %w", err)
	}
	return nil
}
