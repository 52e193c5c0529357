package krb5gss

import (
	"fmt"
	"sync"

	"github.com/jcmturner/gokrb5/v8/types"
)

// Context is an established Kerberos 5 security context. Wrap and Unwrap
// may be called from different goroutines (one sender, one receiver).
type Context struct {
	acceptor bool
	key      types.EncryptionKey // RFC 4121 §2: acceptor subkey, else initiator subkey, else session key
	subkey   bool                // key is the acceptor's subkey
	// Flags are the GSS context flags the initiator asked for (RFC 4121 §4.1.1.1).
	Flags uint32
	// Principal is the initiator's principal, "name@REALM" (acceptor
	// side), or the target's (initiator side).
	Principal string
	// Service is the service principal of the ticket, "ftp/HOST@REALM"
	// (acceptor side).
	Service string

	sendMu  sync.Mutex
	sendSeq uint64
	recvMu  sync.Mutex
	recvSeq uint64
}

// GSS context flags (RFC 2744).
const (
	FlagDeleg    = 1
	FlagMutual   = 2
	FlagReplay   = 4
	FlagSequence = 8
	FlagConf     = 16
	FlagInteg    = 32
)

func (c *Context) flags(fromAcceptor bool) byte {
	var f byte
	if fromAcceptor {
		f |= flagSentByAcceptor
	}
	if c.subkey {
		f |= flagAcceptorSubkey
	}
	return f
}

// Wrap protects msg: integrity only (RFC 2228 MIC) or, with conf, also
// confidentiality (ENC).
func (c *Context) Wrap(msg []byte, conf bool) ([]byte, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	usage := uint32(usageInitiatorSeal)
	if c.acceptor {
		usage = usageAcceptorSeal
	}
	tok, err := sealToken(c.key, usage, c.flags(c.acceptor), c.sendSeq, msg, conf)
	if err != nil {
		return nil, err
	}
	c.sendSeq++
	return tok, nil
}

// Unwrap verifies a token from the peer and returns its message and
// whether it was encrypted. Tokens must arrive in order: a replayed,
// reordered or dropped token is an error (the control channel is TCP).
func (c *Context) Unwrap(tok []byte) (msg []byte, conf bool, err error) {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	defer func() {
		if p := recover(); p != nil { // in gokrb5's decryption
			msg, conf, err = nil, false, fmt.Errorf("%w: malformed wrap token (%v)", ErrProtocol, p)
		}
	}()
	usage := uint32(usageAcceptorSeal)
	if c.acceptor {
		usage = usageInitiatorSeal
	}
	msg, seq, conf, err := openToken(c.key, usage, c.flags(!c.acceptor), tok)
	if err != nil {
		return nil, false, err
	}
	if seq != c.recvSeq {
		return nil, false, fmt.Errorf("krb5gss: token out of sequence (got %d, want %d)", seq, c.recvSeq)
	}
	c.recvSeq++
	return msg, conf, nil
}
