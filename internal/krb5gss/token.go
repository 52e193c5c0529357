package krb5gss

import (
	"bytes"
	"crypto/hmac"
	"encoding/asn1"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/types"
)

// OID is the Kerberos 5 GSS-API mechanism, 1.2.840.113554.1.2.2.
var OID = asn1.ObjectIdentifier{1, 2, 840, 113554, 1, 2, 2}

// oidDER is OID's DER encoding (tag, length, value).
var oidDER = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Token IDs of RFC 1964 §1.1 and RFC 4121 §4.1, §4.2.6.
var (
	tokAPReq = []byte{0x01, 0x00}
	tokAPRep = []byte{0x02, 0x00}
	tokError = []byte{0x03, 0x00}
	tokWrap  = []byte{0x05, 0x04}
)

// ErrProtocol marks a malformed or unexpected token.
var ErrProtocol = errors.New("krb5gss: protocol error")

// IsKerberos reports whether tok is an initial context token of the
// Kerberos 5 mechanism (RFC 2743 §3.1 framing with the krb5 OID). GSI's
// first token, a TLS ClientHello, starts with 0x16 and never matches.
func IsKerberos(tok []byte) bool {
	inner, err := unframe(tok)
	return err == nil && len(inner) >= 2
}

// frame builds an RFC 2743 §3.1 token: [APPLICATION 0] { OID, tokID, body }.
func frame(tokID, body []byte) []byte {
	n := len(oidDER) + len(tokID) + len(body)
	out := []byte{0x60}
	out = append(out, derLen(n)...)
	out = append(out, oidDER...)
	out = append(out, tokID...)
	return append(out, body...)
}

func derLen(n int) []byte {
	switch {
	case n < 0x80:
		return []byte{byte(n)}
	case n < 0x100:
		return []byte{0x81, byte(n)}
	case n < 0x10000:
		return []byte{0x82, byte(n >> 8), byte(n)}
	default:
		return []byte{0x83, byte(n >> 16), byte(n >> 8), byte(n)}
	}
}

// unframe checks the framing and the krb5 OID and returns tokID|body.
func unframe(tok []byte) ([]byte, error) {
	if len(tok) < 2 || tok[0] != 0x60 {
		return nil, fmt.Errorf("%w: not an initial context token", ErrProtocol)
	}
	p := 1
	n := int(tok[p])
	p++
	if n&0x80 != 0 {
		k := n & 0x7f
		if k == 0 || k > 3 || p+k > len(tok) {
			return nil, fmt.Errorf("%w: bad token length", ErrProtocol)
		}
		n = 0
		for _, b := range tok[p : p+k] {
			n = n<<8 | int(b)
		}
		p += k
	}
	if n != len(tok)-p {
		return nil, fmt.Errorf("%w: token length %d, have %d bytes", ErrProtocol, n, len(tok)-p)
	}
	if !bytes.HasPrefix(tok[p:], oidDER) {
		return nil, fmt.Errorf("%w: not the Kerberos 5 mechanism", ErrProtocol)
	}
	return tok[p+len(oidDER):], nil
}

// rfc4121 reports whether an enctype uses RFC 4121 tokens and is accepted.
func rfc4121(etype int32) bool {
	switch etype {
	case etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96,
		etypeID.AES128_CTS_HMAC_SHA256_128, etypeID.AES256_CTS_HMAC_SHA384_192:
		return true
	}
	return false
}

// checkKey reports why key cannot protect RFC 4121 tokens: an enctype
// other than AES, or a key value not of the enctype's size (a peer's
// subkey is the peer's own choice; a wrong size would fail every token
// later instead of now).
func checkKey(key types.EncryptionKey) error {
	if !rfc4121(key.KeyType) {
		return fmt.Errorf("krb5gss: enctype %d is not supported (use AES)", key.KeyType)
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return fmt.Errorf("krb5gss: %w", err)
	}
	if len(key.KeyValue) != et.GetKeyByteSize() {
		return fmt.Errorf("%w: a %d-byte key for enctype %d, which takes %d bytes", ErrProtocol, len(key.KeyValue), key.KeyType, et.GetKeyByteSize())
	}
	return nil
}

// Wrap token flags (RFC 4121 §4.2.2).
const (
	flagSentByAcceptor = 0x01
	flagSealed         = 0x02
	flagAcceptorSubkey = 0x04
)

// Key usages (RFC 4121 §2).
const (
	usageAcceptorSeal  = 22
	usageInitiatorSeal = 24
)

const hdrLen = 16

func wrapHeader(flags byte, ec, rrc uint16, seq uint64) []byte {
	h := make([]byte, hdrLen)
	copy(h, tokWrap)
	h[2] = flags
	h[3] = 0xff
	binary.BigEndian.PutUint16(h[4:], ec)
	binary.BigEndian.PutUint16(h[6:], rrc)
	binary.BigEndian.PutUint64(h[8:], seq)
	return h
}

// sealToken makes an RFC 4121 wrap token (RRC 0, EC 0 when sealed).
func sealToken(key types.EncryptionKey, usage uint32, flags byte, seq uint64, msg []byte, conf bool) ([]byte, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, err
	}
	if conf {
		flags |= flagSealed
		h := wrapHeader(flags, 0, 0, seq)
		plain := append(append([]byte{}, msg...), h...)
		_, ct, err := et.EncryptMessage(key.KeyValue, plain, usage)
		if err != nil {
			return nil, err
		}
		return append(h, ct...), nil
	}
	sum, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, msg...), wrapHeader(flags, 0, 0, seq)...), usage)
	if err != nil {
		return nil, err
	}
	out := wrapHeader(flags, uint16(len(sum)), 0, seq)
	out = append(out, msg...)
	return append(out, sum...), nil
}

// openToken verifies an RFC 4121 wrap token and returns its message.
// wantFlags are the sent-by-acceptor and acceptor-subkey bits expected.
func openToken(key types.EncryptionKey, usage uint32, wantFlags byte, tok []byte) (msg []byte, seq uint64, conf bool, err error) {
	if len(tok) < hdrLen || !bytes.Equal(tok[:2], tokWrap) || tok[3] != 0xff {
		return nil, 0, false, fmt.Errorf("%w: not a wrap token", ErrProtocol)
	}
	flags := tok[2]
	if flags&^(flagSentByAcceptor|flagSealed|flagAcceptorSubkey) != 0 ||
		flags&(flagSentByAcceptor|flagAcceptorSubkey) != wantFlags {
		return nil, 0, false, fmt.Errorf("%w: wrap token flags %#x", ErrProtocol, flags)
	}
	ec := binary.BigEndian.Uint16(tok[4:])
	rrc := int(binary.BigEndian.Uint16(tok[6:]))
	seq = binary.BigEndian.Uint64(tok[8:])
	body := tok[hdrLen:]
	if len(body) > 0 {
		// Undo the right rotation (RFC 4121 §4.2.5).
		r := rrc % len(body)
		body = append(append([]byte{}, body[r:]...), body[:r]...)
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, 0, false, err
	}
	if flags&flagSealed != 0 {
		// gokrb5 slices short ciphertexts out of range: check first.
		if len(body) < et.GetConfounderByteSize()+et.GetHMACBitLength()/8+hdrLen {
			return nil, 0, false, fmt.Errorf("%w: sealed token too short", ErrProtocol)
		}
		plain, err := et.DecryptMessage(key.KeyValue, body, usage)
		if err != nil {
			return nil, 0, false, fmt.Errorf("krb5gss: wrap token does not decrypt: %w", err)
		}
		if len(plain) < hdrLen+int(ec) {
			return nil, 0, false, fmt.Errorf("%w: sealed token too short", ErrProtocol)
		}
		inner := plain[len(plain)-hdrLen:]
		// The encrypted header copy has RRC 0; the rest must match.
		want := wrapHeader(flags, ec, 0, seq)
		if !bytes.Equal(inner, want) {
			return nil, 0, false, fmt.Errorf("%w: sealed token header mismatch", ErrProtocol)
		}
		return plain[:len(plain)-hdrLen-int(ec)], seq, true, nil
	}
	if int(ec) > len(body) || int(ec) != et.GetHMACBitLength()/8 {
		return nil, 0, false, fmt.Errorf("%w: bad checksum length %d", ErrProtocol, ec)
	}
	msg = body[:len(body)-int(ec)]
	sum := body[len(body)-int(ec):]
	want, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, msg...), wrapHeader(flags, 0, 0, seq)...), usage)
	if err != nil {
		return nil, 0, false, err
	}
	if !hmac.Equal(sum, want) {
		return nil, 0, false, errors.New("krb5gss: wrap token checksum mismatch")
	}
	return msg, seq, false, nil
}
