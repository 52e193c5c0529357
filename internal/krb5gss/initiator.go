package krb5gss

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Initiator is the client side of one context establishment, always with
// mutual authentication: the server must prove it holds the service key.
type Initiator struct {
	auth    types.Authenticator
	sessKey types.EncryptionKey
	target  string
}

// Initiate makes the initial context token for a service ticket tkt with
// its session key, for client cname@realm.
func Initiate(tkt messages.Ticket, sessKey types.EncryptionKey, realm string, cname types.PrincipalName) (*Initiator, []byte, error) {
	if !rfc4121(sessKey.KeyType) {
		return nil, nil, fmt.Errorf("krb5gss: session enctype %d is not supported (use AES)", sessKey.KeyType)
	}
	auth, err := types.NewAuthenticator(realm, cname)
	if err != nil {
		return nil, nil, err
	}
	et, err := crypto.GetEtype(sessKey.KeyType)
	if err != nil {
		return nil, nil, err
	}
	if err := auth.GenerateSeqNumberAndSubKey(sessKey.KeyType, et.GetKeyByteSize()); err != nil {
		return nil, nil, err
	}
	// RFC 4121 §4.1.1: Lgth 16, no channel bindings, flags.
	ck := make([]byte, 24)
	binary.LittleEndian.PutUint32(ck, 16)
	binary.LittleEndian.PutUint32(ck[20:], FlagMutual|FlagReplay|FlagSequence|FlagConf|FlagInteg)
	auth.Cksum = types.Checksum{CksumType: 0x8003, Checksum: ck}
	req, err := messages.NewAPReq(tkt, sessKey, auth)
	if err != nil {
		return nil, nil, err
	}
	types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	b, err := req.Marshal()
	if err != nil {
		return nil, nil, err
	}
	in := &Initiator{auth: auth, sessKey: sessKey, target: tkt.SName.PrincipalNameString() + "@" + tkt.Realm}
	return in, frame(tokAPReq, b), nil
}

// Finish checks the acceptor's AP-REP and returns the established context.
func (in *Initiator) Finish(tok []byte) (*Context, error) {
	inner, err := unframe(tok)
	if err != nil {
		return nil, err
	}
	if len(inner) >= 2 && inner[0] == tokError[0] && inner[1] == tokError[1] {
		var ke messages.KRBError
		if err := ke.Unmarshal(inner[2:]); err == nil {
			return nil, fmt.Errorf("krb5gss: the server refused the ticket: %s", ke.Error())
		}
		return nil, errors.New("krb5gss: the server refused the ticket")
	}
	if len(inner) < 2 || inner[0] != tokAPRep[0] || inner[1] != tokAPRep[1] {
		return nil, fmt.Errorf("%w: expected an AP-REP", ErrProtocol)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(inner[2:]); err != nil {
		return nil, fmt.Errorf("krb5gss: AP-REP: %w", err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, in.sessKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		return nil, fmt.Errorf("krb5gss: AP-REP does not decrypt (not the service we asked for): %w", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return nil, fmt.Errorf("krb5gss: AP-REP: %w", err)
	}
	if !part.CTime.Equal(in.auth.CTime.Truncate(1e9)) && !part.CTime.Equal(in.auth.CTime) || part.Cusec != in.auth.Cusec {
		return nil, errors.New("krb5gss: AP-REP does not answer our authenticator")
	}
	ctx := &Context{
		key:       in.auth.SubKey,
		Principal: in.target,
		sendSeq:   uint64(uint32(in.auth.SeqNumber)),
		recvSeq:   uint64(uint32(part.SequenceNumber)),
	}
	if len(part.Subkey.KeyValue) > 0 {
		if err := checkKey(part.Subkey); err != nil {
			return nil, fmt.Errorf("krb5gss: acceptor subkey: %w", err)
		}
		ctx.key, ctx.subkey = part.Subkey, true
	}
	return ctx, nil
}
