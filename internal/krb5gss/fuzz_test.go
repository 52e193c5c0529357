package krb5gss

import (
	"net/netip"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/messages"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"
)

// FuzzKerberosAccept: no initial token makes the acceptor panic or
// establish a context without the service key.
func FuzzKerberosAccept(f *testing.F) {
	f.Add([]byte{0x60, 0x03, 0x06, 0x01, 0x00})
	f.Add(frame(tokAPReq, []byte{0x6e, 0x03, 0x30, 0x01, 0x00}))
	f.Add(frame(tokAPReq, nil))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x10})
	kt := keytab.New()
	if err := kt.AddEntry("ftp/localhost", "R.TEST", "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		f.Fatal(err)
	}
	// An AP-REQ for a service in the keytab whose ciphertexts are too
	// short: gokrb5 would slice out of range decrypting them.
	for _, n := range []int{0, 3, 27} {
		sname := types.NewPrincipalName(nametype.KRB_NT_SRV_HST, "ftp/localhost")
		req := messages.APReq{PVNO: 5, MsgType: msgtype.KRB_AP_REQ,
			Ticket:                 messages.Ticket{TktVNO: 5, Realm: "R.TEST", SName: sname, EncPart: types.EncryptedData{EType: etypeID.AES256_CTS_HMAC_SHA1_96, KVNO: 1, Cipher: make([]byte, n)}},
			EncryptedAuthenticator: types.EncryptedData{EType: etypeID.AES256_CTS_HMAC_SHA1_96, Cipher: make([]byte, n)},
		}
		b, err := req.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame(tokAPReq, b))
	}
	acc := &Acceptor{Keytab: kt, Service: "ftp"}
	f.Fuzz(func(t *testing.T, tok []byte) {
		if ctx, _, err := acc.Accept(tok, netip.MustParseAddr("127.0.0.1")); err == nil || ctx != nil {
			t.Fatalf("accepted %x", tok)
		}
		IsKerberos(tok)
	})
}

// FuzzKerberosUnwrap: no token makes Unwrap panic, and only tokens made
// with the key pass.
func FuzzKerberosUnwrap(f *testing.F) {
	key := types.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: make([]byte, 32)}
	good, _ := (&Context{key: key}).Wrap([]byte("USER x\r\n"), false)
	sealed, _ := (&Context{key: key}).Wrap([]byte("USER x\r\n"), true)
	f.Add(good)
	f.Add(sealed)
	f.Add([]byte{0x05, 0x04, 0x00, 0xff, 0x00, 0x0c, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, tok []byte) {
		c := &Context{acceptor: true, key: key}
		msg, _, err := c.Unwrap(tok)
		if err == nil && string(msg) != "USER x\r\n" {
			t.Fatalf("forged token accepted: %q", msg)
		}
	})
}
