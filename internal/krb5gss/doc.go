// Package krb5gss is the Kerberos 5 GSS-API mechanism (RFC 1964 framing,
// RFC 4121 per-message tokens) as RFC 2228 FTP security needs it: one
// AP-REQ/AP-REP exchange carried in ADAT, then Wrap/Unwrap of command and
// reply lines (MIC with integrity only, ENC with confidentiality).
//
// The acceptor verifies the AP-REQ with gokrb5 against a keytab (ticket
// decryption, ticket times, clock skew, replay cache); a peer's principal
// exists only in a Context that a verified AP-REQ made. Only the enctypes
// of RFC 4121 tokens are accepted (AES with HMAC-SHA1 or SHA-2): older
// ones (RFC 1964 tokens: DES, 3DES, RC4) are refused.
//
// Flow (RFC 2228 with RFC 4121):
//
//	C: AUTH GSSAPI              S: 334
//	C: ADAT <initial context token: 0x60 len OID(1.2.840.113554.1.2.2) 0x0100 AP-REQ>
//	S: 235 ADAT=<0x60 len OID 0x0200 AP-REP>   (when the client asked for mutual authentication)
//	C: MIC <wrap token, conf=0>  S: 631 <wrap token, conf=0>
//	C: ENC <wrap token, conf=1>  S: 632 <wrap token, conf=1>
package krb5gss
