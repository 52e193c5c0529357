package pi

// AUTH GSSAPI with the Kerberos 5 mechanism (RFC 2228, RFC 4121 tokens;
// internal/krb5gss). GSI and Kerberos both say "AUTH GSSAPI": the first
// ADAT token tells them apart (a krb5 initial context token starts with
// 0x60 and the krb5 OID; GSI's is a TLS ClientHello). Kerberos is offered
// only when Security.Kerberos is set (a keytab). The exchange is one
// step: the AP-REQ is verified (keytab, ticket times, clock skew, replay
// cache) and answered with 235, carrying an AP-REP when the client asked
// for mutual authentication. Every failure is 535 and leaves the session
// unauthenticated; nothing falls back to GSI or to clear text.
//
// After it, commands come in MIC (integrity) or ENC (confidentiality)
// and replies go in 631, or 632 once the client has sent ENC. Data
// channels stay in clear: PROT C only; PROT S and P are refused with 536.

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/gss"
	"github.com/ferrygrid/ferry/internal/krb5gss"
	"github.com/ferrygrid/ferry/internal/wire"
)

// krbState is an established Kerberos context of a session.
type krbState struct {
	ctx *krb5gss.Context
	// enc: the client has sent ENC; replies are then encrypted too (632).
	enc bool // guarded by the replyWriter's mu once set up
}

// acceptKerberos answers the first ADAT token when it is a Kerberos one.
func (s *session) acceptKerberos(p *gsiPending, token []byte) wire.Reply {
	acc := s.cfg.Security.Kerberos
	kctx, out, err := acc.Accept(token, remoteAddrPort(s.conn).Addr())
	if err != nil {
		return s.krbFailed(p, err)
	}
	p.close() // the GSI acceptor prepared at AUTH is not used
	s.observeHandshake("krb5", p.began, nil)
	st := &krbState{ctx: kctx}
	s.sec = secState{mode: secKrb5, principal: kctx.Principal, service: kctx.Service}
	s.user = "" // a USER sent in clear does not carry over (RFC 2228 §3)
	s.krb.Store(st)
	s.log = s.log.With("principal", kctx.Principal)
	s.log.Info("Kerberos authenticated", "mutual", out != nil)
	if len(out) > 0 {
		// The last reply in clear. It ends in a bare LF: curl (7.x to
		// 8.16, the releases with FTP Kerberos) base64-decodes the rest
		// of the line including its CR and fails on CRLF; line readers
		// that follow RFC 959 take a bare LF too (MIT's ftp, Ferry's).
		s.rw.writeRaw([]byte("235 ADAT=" + base64.StdEncoding.EncodeToString(out) + "\n"))
	} else {
		s.send(ok(235, "GSSAPI Authentication successful."))
	}
	s.rw.setKrbWrap(st)
	return wire.Reply{}
}

func (s *session) krbFailed(p *gsiPending, err error) wire.Reply {
	p.close()
	s.sec = secState{}
	s.observeHandshake("krb5", p.began, err)
	s.log.Warn("Kerberos authentication failed", "err", err)
	return s.authFailed(535, "GSSAPI authentication failed.")
}

// unwrapKrbLine turns a MIC/ENC line into the command it protects.
func (s *session) unwrapKrbLine(st *krbState, line string) (string, error) {
	verb, arg, _ := strings.Cut(line, " ")
	verb = strings.ToUpper(verb)
	switch verb {
	case "ENC", "MIC":
	default:
		// CONF (confidentiality without integrity) is not offered.
		return "", errUnprotected
	}
	token, err := base64.StdEncoding.DecodeString(strings.TrimSpace(arg))
	if err != nil {
		return "", fmt.Errorf("%w: token is not base64", gss.ErrProtocol)
	}
	plain, conf, err := st.ctx.Unwrap(token)
	if err != nil {
		return "", err
	}
	if conf != (verb == "ENC") {
		return "", fmt.Errorf("%w: %s with a token of the other protection level", gss.ErrProtocol, verb)
	}
	if conf {
		s.rw.krbENC()
	}
	return strings.TrimRight(string(plain), "\r\n"), nil
}

// setKrbWrap protects every later reply with the Kerberos context.
func (w *replyWriter) setKrbWrap(st *krbState) {
	w.mu.Lock()
	w.wrapCode = "631"
	w.wrap = func(line []byte) ([]byte, error) { return st.ctx.Wrap(line, st.enc) }
	w.krb = st
	w.mu.Unlock()
}

// writeRaw writes b as it is, unwrapped (krb5.go's 235 reply).
func (w *replyWriter) writeRaw(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, w.err = w.conn.Write(b)
}

// krbENC switches replies to confidentiality (632) for good.
func (w *replyWriter) krbENC() {
	w.mu.Lock()
	if w.krb != nil && !w.krb.enc {
		w.krb.enc = true
		w.wrapCode = "632"
	}
	w.mu.Unlock()
}
