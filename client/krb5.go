package client

// Kerberos 5 security (RFC 2228 AUTH GSSAPI with RFC 4121 tokens,
// internal/krb5gss): one ADAT carrying an AP-REQ for ftp/HOST@REALM, a
// 235 whose AP-REP proves the server holds the service key (mutual
// authentication is required), then every command in MIC (or ENC) and
// every reply in 631/632. Data channels stay in clear (PROT C): Ferry's
// server offers no Kerberos data protection.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/ferrygrid/ferry/internal/krb5gss"
	"github.com/ferrygrid/ferry/internal/wire"
)

// KerberosConfig makes Dial authenticate with Kerberos 5.
type KerberosConfig struct {
	// Client holds the user's Kerberos credentials (a TGT); see
	// KerberosFromCCache and KerberosFromKeytab.
	Client *krbclient.Client
	// Service is the service name; "" means "ftp" (ftp/HOST@REALM).
	Service string
	// ServerName is the host part of the service principal; "" means the
	// host of the address dialed.
	ServerName string
	// Confidential sends commands in ENC (encrypted) instead of MIC
	// (integrity only); replies follow.
	Confidential bool
}

// KerberosFromCCache loads krb5.conf ($KRB5_CONFIG, else /etc/krb5.conf)
// and the credential cache ($KRB5CCNAME, a FILE: cache, else
// /tmp/krb5cc_<uid>), as kinit left them.
func KerberosFromCCache() (*krbclient.Client, error) {
	cfg, err := krb5Config()
	if err != nil {
		return nil, err
	}
	path := strings.TrimPrefix(os.Getenv("KRB5CCNAME"), "FILE:")
	if path == "" {
		path = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
	}
	if strings.Contains(path, ":") && !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("client: Kerberos: credential cache %q: only FILE: caches are supported", path)
	}
	cc, err := credentials.LoadCCache(path)
	if err != nil {
		return nil, fmt.Errorf("client: Kerberos: credential cache %s (run kinit): %w", path, err)
	}
	cl, err := krbclient.NewFromCCache(cc, cfg, krbclient.DisablePAFXFAST(true))
	if err != nil {
		return nil, fmt.Errorf("client: Kerberos: credential cache %s: %w", path, err)
	}
	return cl, nil
}

// KerberosFromKeytab logs principal ("name" or "name@REALM") in with
// its key from a keytab file.
func KerberosFromKeytab(file, principal string) (*krbclient.Client, error) {
	cfg, err := krb5Config()
	if err != nil {
		return nil, err
	}
	kt, err := keytab.Load(file)
	if err != nil {
		return nil, fmt.Errorf("client: Kerberos: keytab %s: %w", file, err)
	}
	name, realm, _ := strings.Cut(principal, "@")
	if realm == "" {
		realm = cfg.LibDefaults.DefaultRealm
	}
	cl := krbclient.NewWithKeytab(name, realm, kt, cfg, krbclient.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		return nil, fmt.Errorf("client: Kerberos: login of %s@%s with %s: %w", name, realm, file, err)
	}
	return cl, nil
}

func krb5Config() (*config.Config, error) {
	path := os.Getenv("KRB5_CONFIG")
	if path == "" {
		path = "/etc/krb5.conf"
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("client: Kerberos: %s: %w", path, err)
	}
	return cfg, nil
}

// krbState is a Conn's Kerberos session after authentication.
type krbState struct {
	ctx  *krb5gss.Context
	conf bool
}

// authKrb runs AUTH GSSAPI and ADAT with a Kerberos AP-REQ.
func (c *Conn) authKrb(ctx context.Context, k *KerberosConfig, host string) error {
	if k.Client == nil {
		return errors.New("client: KerberosConfig.Client is nil")
	}
	if k.ServerName != "" {
		host = k.ServerName
	}
	service := k.Service
	if service == "" {
		service = "ftp"
	}
	spn := service + "/" + host
	tkt, key, err := k.Client.GetServiceTicket(spn)
	if err != nil {
		return fmt.Errorf("client: Kerberos: ticket for %s: %w", spn, err)
	}
	in, tok, err := krb5gss.Initiate(tkt, key, k.Client.Credentials.Domain(), k.Client.Credentials.CName())
	if err != nil {
		return fmt.Errorf("client: Kerberos: %w", err)
	}
	r, err := c.cmd(ctx, "AUTH GSSAPI")
	if err != nil {
		return err
	}
	if r.Code != 334 {
		return fmt.Errorf("client: the server refused GSSAPI authentication (AUTH GSSAPI): %w", &ReplyError{Reply: r})
	}
	r, err = c.cmd(ctx, "ADAT %s", base64.StdEncoding.EncodeToString(tok))
	if err != nil {
		return err
	}
	rep, hasToken, err := adatToken(r)
	switch {
	case err != nil:
	case r.Code != 235:
		c.close()
		return fmt.Errorf("client: Kerberos authentication refused by the server: %w", &ReplyError{Reply: r})
	case !hasToken:
		err = errors.New("the server sent no AP-REP (mutual authentication is required)")
	}
	var kctx *krb5gss.Context
	if err == nil {
		kctx, err = in.Finish(rep)
	}
	if err != nil {
		c.close()
		return fmt.Errorf("client: Kerberos authentication: %w", err)
	}
	c.krb = &krbState{ctx: kctx, conf: k.Confidential}
	c.rs.setReader(wire.NewReplyReader(newUnwrapReader(c.raw, "Kerberos", c.krb.unwrap, "631", "632")))
	c.log.Debug("Kerberos authenticated", "server", kctx.Principal)
	return nil
}

// sendKrb writes one command line in MIC (or ENC).
func (c *Conn) sendKrb(line string) error {
	c.wbuf = append(append(c.wbuf[:0], line...), '\r', '\n')
	tok, err := c.krb.ctx.Wrap(c.wbuf, c.krb.conf)
	if err != nil {
		return fmt.Errorf("client: wrap: %w", err)
	}
	verb := "MIC "
	if c.krb.conf {
		verb = "ENC "
	}
	out := append([]byte(verb), base64.StdEncoding.AppendEncode(nil, tok)...)
	_, err = c.nc.Write(append(out, '\r', '\n'))
	return err
}

// unwrap is the Kerberos part of a protected reply: a reply must be
// at least as protected as the commands (632, sealed, when they go in
// ENC).
func (st *krbState) unwrap(tok []byte) ([]byte, error) {
	plain, conf, err := st.ctx.Unwrap(tok)
	if err != nil {
		return nil, err
	}
	if st.conf && !conf {
		return nil, fmt.Errorf("%w after Kerberos authentication: a reply only integrity-protected to encrypted commands", ErrUnprotectedReply)
	}
	return plain, nil
}
