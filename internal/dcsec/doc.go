// Package dcsec secures FTP data connections: data channel authentication
// (DCAU, GFD.020) and protection (PROT, RFC 2228 and RFC 4217), for both
// the server's DTP and the client. It works on any net.Conn the caller has
// dialed or accepted and never dials or listens itself.
//
//	DTP / client ──dial or accept──► net.Conn ──Secure──► net.Conn for the transfer
//	                                               │
//	                        Config{Style, Level, Certificate, VerifyPeer}
//	                                               │
//	               SelfAuthorization / SubjectAuthorization (gsi.TrustStore)
//
// Two conventions are supported (../shared/gsi.md §6):
//
// GSI (GridFTP): the side that connects is the TLS client and the listener
// the TLS server, whoever is the FTP server; both present a certificate and
// verification is VerifyPeer's alone (proxy chains are beyond
// crypto/x509). The connector sends no SNI (or a valid host name only);
// the listener accepts any.
//
//   - DCAU N: no TLS at all (a nil *Config).
//   - DCAU A/S with PROT C: the TLS handshake authenticates; then, in
//     TLS 1.3, the listener sends one application-data record holding 0x00
//     (its handshake ends with nothing to send); the connector sends one
//     record holding '0' ("no delegation"); then the TLS session is
//     abandoned without close_notify and the file bytes flow in clear on
//     the same socket. Under TLS 1.2 the listener's last flight is its own
//     Finished, so it sends no 0x00 (captures srv-max12*.data1.txt).
//     crypto/tls reads ahead, so during that exchange it reads through a
//     reader that never crosses a TLS record boundary: the first clear byte
//     stays in the socket, and the caller gets the original connection back
//     (sendfile and splice keep working).
//   - PROT S/P: every byte in TLS records, no flag bytes.
//
// FTPS (RFC 4217): the FTP server is the TLS server whoever connects;
// PROT C means no TLS at all on the data channel and PROT P means TLS.
//
// Protection never silently falls back: if the handshake fails, Secure
// closes the connection and returns the error.
//
// Authentication is never skipped by omission: a Config that must check
// its peer (GSI style, or this side the TLS client) and has no VerifyPeer
// is refused. Config.AuthenticatesPeer says whether a data channel proves
// who its peer is; the DTP reads it (and nothing else) to decide whether
// a data peer may be a host other than the client's.
package dcsec
