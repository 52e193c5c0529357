package pi

// DCSC, GCT's data channel credential (gsi.md §6, protocol.md): the client
// hands the session a credential that both ends of its data connections
// present from then on, instead of the proxy it delegated. The
// certificate it carries is then the data channel's one trust anchor
// (dcsec.DataCredentialAuthorization): with DCAU A or S a peer that does
// not present it is refused, and nothing falls back to the session's own
// credential. DCAU N still means no authentication at all, as in GCT:
// only the session's owner can send it.
//
//	DCSC P <base64 of PEM: cert, key, chain>  → 250 OK.
//	DCSC D                                    → 250 OK. (back to the delegated proxy)
//	DCSC P !!!                                → 500 Invalid base64 input for credential type P.
//	DCSC P <base64 of garbage>                → 500-Credential import failed. / reason / 500 End.
//	DCSC X <anything>                         → 500 Unsupported credential type.
//	DCSC P, DCSC X (no credential)            → 501 Invalid command arguments.
//
// Like the rest of DCAU, it needs a logged-in GSI session: there the
// credential's private key travels in an encrypted control channel and
// DCAU A/S exist. Other sessions get 504 for DCSC P, and FEAT lists
// "DCSC P,D" (GCT's line) only where DCSC P can succeed: on a server with
// a GSI credential, in a session that is or may still become GSI. (GCT
// lists it in every session and would accept a key sent in clear.)
// A striped server neither lists nor takes DCSC P (504): its movers
// cannot check a credential they do not have.

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/wire"
)

// featDCSC is DCSC's FEAT line: the credential types it takes.
const featDCSC = "DCSC P,D"

// canDCSC reports whether DCSC P can work in this session (FEAT).
func (s *session) canDCSC() bool {
	sec := s.cfg.Security
	if sec == nil || sec.Host == nil || sec.Trust == nil {
		return false
	}
	if _, striped := s.dtp.(StripedDTP); striped {
		return false // its movers could not check the credential
	}
	switch s.sec.mode {
	case secNone, secGSIPending:
		return s.acct == nil
	case secGSI:
		return true
	}
	return false
}

func cmdDCSC(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 2)
	typ := strings.ToUpper(f[0])
	if typ == "D" {
		s.dcsc = nil
		s.applyDataSecurity()
		return ok(250, "OK.")
	}
	if len(f) < 2 || strings.TrimSpace(f[1]) == "" {
		return ok(501, "Invalid command arguments.")
	}
	if typ != "P" {
		return ok(500, "Unsupported credential type.")
	}
	if s.sec.mode != secGSI {
		return ok(504, "DCSC P needs a GSI (gsiftp://) session.")
	}
	if _, striped := s.dtp.(StripedDTP); striped {
		return ok(504, "DCSC P is not available on a striped server: its data movers cannot check a session's credential.")
	}
	blob := strings.TrimSpace(f[1])
	if len(blob) > base64.StdEncoding.EncodedLen(dcsec.MaxDataCredential) {
		return ok(500, "Credential too large.")
	}
	data, err := base64.StdEncoding.DecodeString(blob)
	if err != nil {
		if data, err = base64.RawStdEncoding.DecodeString(blob); err != nil {
			return ok(500, "Invalid base64 input for credential type P.")
		}
	}
	cred, err := dcsec.ParseDataCredential(data, time.Now())
	clear(data)
	if err != nil {
		s.log.Info("DCSC credential refused", "err", err)
		reason := strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, err.Error())
		return wire.Reply{Code: 500, Lines: []string{"Credential import failed.", reason, "End."}}
	}
	s.dcsc = cred
	s.applyDataSecurity()
	leaf := cred.Leaf()
	s.log.Info("DCSC data channel credential set", "subject", cred.Identity(), "not-after", leaf.NotAfter.UTC())
	return ok(250, "OK.")
}

// dcscSecurity is the data channel configuration under a DCSC credential:
// this side presents it, and the peer must present it too (DCAU S: and
// its identity must be the subject).
func (s *session) dcscSecurity() *dcsec.Config {
	cert := s.dcsc.TLSCertificate()
	subject := ""
	if s.dcau == 'S' {
		subject = s.dcauSubject
	}
	return &dcsec.Config{
		Style:       dcsec.GSI,
		Level:       dcsec.Level(s.prot),
		Server:      true,
		Certificate: &cert,
		VerifyPeer:  dcsec.DataCredentialAuthorization(s.dcsc, subject),
	}
}
