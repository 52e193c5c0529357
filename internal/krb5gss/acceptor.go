package krb5gss

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/addrtype"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Acceptor accepts Kerberos 5 security contexts with a service keytab.
type Acceptor struct {
	// Keytab holds the service's keys (ftp/HOST@REALM). Required.
	Keytab *keytab.Keytab
	// Service, when set, is the only service name accepted ("ftp"): a
	// ticket for any other principal in the keytab is refused.
	Service string
	// Principal, when set, is the only service principal accepted, its
	// components joined by "/" ("ftp/host.example.org"), and Realm, when
	// set, its realm. Without them a ticket for any principal of Service
	// whose key is in the keytab is accepted.
	Principal, Realm string
	// MaxClockSkew bounds the difference between the client's clock and
	// the server's; zero means 5 minutes.
	MaxClockSkew time.Duration
}

// ErrNotKerberos is a token that is not a Kerberos 5 AP-REQ.
var ErrNotKerberos = errors.New("krb5gss: not a Kerberos 5 initial context token")

// Accept verifies the initiator's first token (an AP-REQ) from the peer at
// remote. On success it returns the established context and the token to
// send back: an AP-REP when the initiator asked for mutual
// authentication, else nil. Every failure is an error and establishes
// nothing.
func (a *Acceptor) Accept(tok []byte, remote netip.Addr) (ctx *Context, out []byte, err error) {
	defer func() {
		// gokrb5 parses and decrypts what the peer sent; a panic there
		// is a refusal, never a context.
		if p := recover(); p != nil {
			ctx, out, err = nil, nil, fmt.Errorf("%w: malformed AP-REQ (%v)", ErrProtocol, p)
		}
	}()
	if a == nil || a.Keytab == nil {
		return nil, nil, errors.New("krb5gss: no keytab")
	}
	req, err := parseAPReq(tok)
	if err != nil {
		return nil, nil, err
	}
	if err := a.checkService(req); err != nil {
		return nil, nil, err
	}
	if err := a.verify(req, remote); err != nil {
		return nil, nil, err
	}
	ctx, sessKey, err := acceptorContext(req)
	if err != nil {
		return nil, nil, err
	}
	auth := req.Authenticator
	mutual := ctx.Flags&FlagMutual != 0 || types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired)
	if !mutual {
		return ctx, nil, nil
	}
	seq, err := rand.Int(rand.Reader, big.NewInt(1<<30))
	if err != nil {
		return nil, nil, err
	}
	ctx.sendSeq = seq.Uint64()
	rep, err := apRep(sessKey, auth.CTime, auth.Cusec, int64(ctx.sendSeq))
	if err != nil {
		return nil, nil, err
	}
	return ctx, frame(tokAPRep, rep), nil
}

// parseAPReq unframes and decodes the initial token, and checks that its
// ciphertexts are long enough to decrypt.
func parseAPReq(tok []byte) (*messages.APReq, error) {
	inner, err := unframe(tok)
	if err != nil || len(inner) < 2 || inner[0] != tokAPReq[0] || inner[1] != tokAPReq[1] {
		return nil, ErrNotKerberos
	}
	var req messages.APReq
	if err := req.Unmarshal(inner[2:]); err != nil {
		return nil, fmt.Errorf("krb5gss: AP-REQ: %w", err)
	}
	// gokrb5 slices short ciphertexts out of range: check first.
	if !longEnough(req.Ticket.EncPart) || !longEnough(req.EncryptedAuthenticator) {
		return nil, fmt.Errorf("%w: AP-REQ ciphertext too short", ErrProtocol)
	}
	return &req, nil
}

// checkService refuses a ticket for a service other than a's.
func (a *Acceptor) checkService(req *messages.APReq) error {
	if a.Service != "" {
		sn := req.Ticket.SName.NameString
		if len(sn) != 2 || sn[0] != a.Service {
			return fmt.Errorf("krb5gss: ticket is for %s, not a %s service", req.Ticket.SName.PrincipalNameString(), a.Service)
		}
	}
	if a.Principal != "" && req.Ticket.SName.PrincipalNameString() != a.Principal ||
		a.Realm != "" && req.Ticket.Realm != a.Realm {
		return fmt.Errorf("krb5gss: ticket is for %s@%s, not this server's service", req.Ticket.SName.PrincipalNameString(), req.Ticket.Realm)
	}
	return nil
}

// verify decrypts and checks the ticket and authenticator with the keytab.
func (a *Acceptor) verify(req *messages.APReq, remote netip.Addr) error {
	skew := a.MaxClockSkew
	if skew <= 0 {
		skew = 5 * time.Minute
	}
	opts := []func(*service.Settings){service.MaxClockSkew(skew), service.DecodePAC(false)}
	if remote.IsValid() {
		opts = append(opts, service.ClientAddress(hostAddress(remote)))
	}
	// VerifyAPREQ decrypts the ticket with the keytab, checks its times,
	// the authenticator (same client, clock skew) and the replay cache.
	okv, _, err := service.VerifyAPREQ(req, service.NewSettings(a.Keytab, opts...))
	if err != nil || !okv {
		if err == nil {
			err = errors.New("AP-REQ not valid")
		}
		return fmt.Errorf("krb5gss: %w", err)
	}
	return nil
}

// acceptorContext checks the verified authenticator against the ticket
// and builds the context from them; it also returns the session key.
func acceptorContext(req *messages.APReq) (*Context, types.EncryptionKey, error) {
	auth := req.Authenticator
	// The client's identity is the ticket's, which the KDC vouched for.
	// The authenticator is the client's own work: gokrb5 compares its
	// cname with the ticket's but not its crealm, so check both here.
	tp := req.Ticket.DecryptedEncPart
	if auth.CRealm != tp.CRealm || !auth.CName.Equal(tp.CName) {
		return nil, types.EncryptionKey{}, fmt.Errorf("%w: authenticator client %s@%s is not the ticket's %s@%s", ErrProtocol,
			auth.CName.PrincipalNameString(), auth.CRealm, tp.CName.PrincipalNameString(), tp.CRealm)
	}
	sessKey := tp.Key
	if err := checkKey(sessKey); err != nil {
		return nil, types.EncryptionKey{}, fmt.Errorf("krb5gss: session key: %w", err)
	}
	gflags, err := gssFlags(auth.Cksum)
	if err != nil {
		return nil, types.EncryptionKey{}, err
	}
	key := sessKey
	if len(auth.SubKey.KeyValue) > 0 {
		if err := checkKey(auth.SubKey); err != nil {
			return nil, types.EncryptionKey{}, fmt.Errorf("krb5gss: subkey: %w", err)
		}
		key = auth.SubKey
	}
	return &Context{
		acceptor:  true,
		key:       key,
		Flags:     gflags,
		Principal: tp.CName.PrincipalNameString() + "@" + tp.CRealm,
		Service:   req.Ticket.SName.PrincipalNameString() + "@" + req.Ticket.Realm,
		recvSeq:   uint64(uint32(auth.SeqNumber)),
	}, sessKey, nil
}

// gssFlags reads the context flags from the authenticator's checksum
// (RFC 4121 §4.1.1), less the delegation flag.
func gssFlags(ck types.Checksum) (uint32, error) {
	if ck.CksumType != 0x8003 || len(ck.Checksum) < 24 {
		return 0, fmt.Errorf("%w: authenticator lacks the GSS checksum", ErrProtocol)
	}
	if binary.LittleEndian.Uint32(ck.Checksum[:4]) != 16 {
		return 0, fmt.Errorf("%w: bad channel-binding length", ErrProtocol)
	}
	gflags := binary.LittleEndian.Uint32(ck.Checksum[20:24])
	if gflags&FlagDeleg != 0 {
		// Forwarded credentials are not used; their presence is fine.
		gflags &^= FlagDeleg
	}
	return gflags, nil
}

// longEnough reports whether ed can hold a confounder and a checksum of
// its (supported) enctype.
func longEnough(ed types.EncryptedData) bool {
	et, err := crypto.GetEtype(ed.EType)
	if err != nil {
		return false
	}
	return len(ed.Cipher) >= et.GetConfounderByteSize()+et.GetHMACBitLength()/8
}

func hostAddress(ip netip.Addr) types.HostAddress {
	ip = ip.Unmap()
	if ip.Is4() {
		b := ip.As4()
		return types.HostAddress{AddrType: addrtype.IPv4, Address: b[:]}
	}
	b := ip.As16()
	return types.HostAddress{AddrType: addrtype.IPv6, Address: b[:]}
}

// encAPRepPart is messages.EncAPRepPart without the subkey, which the
// acceptor does not assert.
type encAPRepPart struct {
	CTime          time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec          int       `asn1:"explicit,tag:1"`
	SequenceNumber int64     `asn1:"explicit,tag:3"`
}

// apRep builds a KRB_AP_REP (RFC 4120 §5.5.2) answering an authenticator
// with ctime and cusec, encrypted in the ticket's session key.
func apRep(sessKey types.EncryptionKey, ctime time.Time, cusec int, seq int64) ([]byte, error) {
	b, err := asn1.Marshal(encAPRepPart{CTime: ctime, Cusec: cusec, SequenceNumber: seq})
	if err != nil {
		return nil, err
	}
	b = asn1tools.AddASNAppTag(b, asnAppTag.EncAPRepPart)
	ed, err := crypto.GetEncryptedData(b, sessKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, err
	}
	rep := messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: ed}
	out, err := asn1.Marshal(rep)
	if err != nil {
		return nil, err
	}
	return asn1tools.AddASNAppTag(out, asnAppTag.APREP), nil
}
