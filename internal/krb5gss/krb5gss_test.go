package krb5gss_test

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/ferrygrid/ferry/internal/krb5gss"
	"github.com/ferrygrid/ferry/internal/testutil/krb5kdc"
)

var local = netip.MustParseAddr("127.0.0.1")

type realm struct {
	kdc *krb5kdc.KDC
	kt  *keytab.Keytab
	cl  *client.Client
}

func setup(t *testing.T) *realm {
	t.Helper()
	k := krb5kdc.Start(t)
	k.AddPrincipal(t, "ftp/localhost")
	k.AddPrincipal(t, "host/localhost")
	k.AddPrincipal(t, "alice")
	kt, err := keytab.Load(k.Keytab(t, "ftp.keytab", "ftp/localhost", "host/localhost"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := credentials.LoadCCache(k.Kinit(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewFromCCache(cc, cfg, client.DisablePAFXFAST(true))
	if err != nil {
		t.Fatal(err)
	}
	return &realm{kdc: k, kt: kt, cl: cl}
}

func (r *realm) initiate(t *testing.T, spn string) (*krb5gss.Initiator, []byte) {
	t.Helper()
	tkt, key, err := r.cl.GetServiceTicket(spn)
	if err != nil {
		t.Fatal(err)
	}
	in, tok, err := krb5gss.Initiate(tkt, key, r.cl.Credentials.Domain(), r.cl.Credentials.CName())
	if err != nil {
		t.Fatal(err)
	}
	return in, tok
}

func TestKerberosContextAgainstKDC(t *testing.T) {
	r := setup(t)
	in, tok := r.initiate(t, "ftp/localhost")
	if !krb5gss.IsKerberos(tok) {
		t.Fatal("initial token not recognised as Kerberos")
	}
	if krb5gss.IsKerberos([]byte{0x16, 0x03, 0x01, 0x00, 0x10}) {
		t.Fatal("a TLS ClientHello recognised as Kerberos")
	}
	acc := &krb5gss.Acceptor{Keytab: r.kt, Service: "ftp"}
	sctx, rep, err := acc.Accept(tok, local)
	if err != nil {
		t.Fatal(err)
	}
	if sctx.Principal != "alice@"+krb5kdc.Realm {
		t.Fatalf("principal %q", sctx.Principal)
	}
	if rep == nil {
		t.Fatal("no AP-REP for a mutual request")
	}
	cctx, err := in.Finish(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, conf := range []bool{false, true, false} {
		w, err := cctx.Wrap([]byte("USER alice\r\n"), conf)
		if err != nil {
			t.Fatal(err)
		}
		m, c, err := sctx.Unwrap(w)
		if err != nil || c != conf || string(m) != "USER alice\r\n" {
			t.Fatalf("unwrap: %q %v %v", m, c, err)
		}
		// A replayed token is refused.
		if _, _, err := sctx.Unwrap(w); err == nil {
			t.Fatal("replayed token accepted")
		}
		w, err = sctx.Wrap([]byte("230 ok\r\n"), conf)
		if err != nil {
			t.Fatal(err)
		}
		bad := bytes.Clone(w)
		bad[len(bad)-1] ^= 1
		if _, _, err := cctx.Unwrap(bad); err == nil {
			t.Fatal("tampered token accepted")
		}
		m, c, err = cctx.Unwrap(w)
		if err != nil || c != conf || string(m) != "230 ok\r\n" {
			t.Fatalf("unwrap reply: %q %v %v", m, c, err)
		}
	}
	// The same AP-REQ again is a replay.
	if _, _, err := acc.Accept(tok, local); err == nil {
		t.Fatal("replayed AP-REQ accepted")
	}
}

func TestKerberosRefusals(t *testing.T) {
	r := setup(t)
	acc := &krb5gss.Acceptor{Keytab: r.kt, Service: "ftp"}
	// A ticket for a service this acceptor does not serve.
	_, tok := r.initiate(t, "host/localhost")
	if _, _, err := acc.Accept(tok, local); err == nil {
		t.Fatal("ticket for host/ accepted by the ftp service")
	}
	// A keytab without the ticket's key.
	_, tok = r.initiate(t, "ftp/localhost")
	other := &krb5gss.Acceptor{Keytab: keytab.New(), Service: "ftp"}
	if _, _, err := other.Accept(tok, local); err == nil {
		t.Fatal("ticket accepted without the service key")
	}
	// A corrupted ticket.
	_, tok = r.initiate(t, "ftp/localhost")
	bad := bytes.Clone(tok)
	bad[len(bad)-40] ^= 0x55
	if _, _, err := acc.Accept(bad, local); err == nil {
		t.Fatal("corrupted AP-REQ accepted")
	}
	// Not Kerberos at all.
	if _, _, err := acc.Accept([]byte{0x16, 3, 1, 0, 4, 1, 2, 3, 4}, local); err == nil {
		t.Fatal("TLS record accepted")
	}
}

// TestKerberosAuthenticatorRealm: the principal is the ticket's client,
// never the authenticator's claim (the client writes the authenticator):
// an authenticator naming another realm or client is refused.
func TestKerberosAuthenticatorRealm(t *testing.T) {
	r := setup(t)
	acc := &krb5gss.Acceptor{Keytab: r.kt, Service: "ftp"}
	tkt, key, err := r.cl.GetServiceTicket("ftp/localhost")
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := krb5gss.Initiate(tkt, key, "OTHER.TEST", r.cl.Credentials.CName())
	if err != nil {
		t.Fatal(err)
	}
	if ctx, _, err := acc.Accept(tok, local); err == nil {
		t.Fatalf("authenticator claiming realm OTHER.TEST accepted as %s", ctx.Principal)
	}
}

// TestKerberosSubkeySize: an authenticator subkey must be of its
// enctype's size, or every token would fail to wrap after a 235.
func TestKerberosSubkeySize(t *testing.T) {
	r := setup(t)
	acc := &krb5gss.Acceptor{Keytab: r.kt, Service: "ftp"}
	for _, c := range []struct {
		etype int32
		n     int
		ok    bool
	}{
		{18, 32, true}, {17, 16, true},
		{18, 1, false}, {18, 5, false}, {18, 16, false}, {18, 31, false}, {18, 4000, false}, {17, 32, false},
	} {
		tok := apReqWithSubkey(t, r, types.EncryptionKey{KeyType: c.etype, KeyValue: make([]byte, c.n)})
		_, _, err := acc.Accept(tok, local)
		if c.ok != (err == nil) {
			t.Errorf("subkey enctype %d, %d bytes: %v", c.etype, c.n, err)
		}
	}
}

// apReqWithSubkey makes an initial context token for ftp/localhost whose
// authenticator carries subkey.
func apReqWithSubkey(t *testing.T, r *realm, subkey types.EncryptionKey) []byte {
	t.Helper()
	tkt, key, err := r.cl.GetServiceTicket("ftp/localhost")
	if err != nil {
		t.Fatal(err)
	}
	auth, err := types.NewAuthenticator(r.cl.Credentials.Domain(), r.cl.Credentials.CName())
	if err != nil {
		t.Fatal(err)
	}
	auth.SeqNumber = 7
	auth.SubKey = subkey
	ck := make([]byte, 24)
	binary.LittleEndian.PutUint32(ck, 16)
	binary.LittleEndian.PutUint32(ck[20:], krb5gss.FlagMutual|krb5gss.FlagSequence|krb5gss.FlagInteg)
	auth.Cksum = types.Checksum{CksumType: 0x8003, Checksum: ck}
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		t.Fatal(err)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return krb5gss.FrameAPReq(b)
}
