// Package client is a GridFTP client: an FTP client (RFC 959) with the
// extensions GridFTP servers such as the Grid Community Toolkit (GCT) server
// speak. It is a library of its own; the ferry command-line tools are a thin
// layer over it.
//
//	+--------+  control: commands, replies  +--------+
//	|  Conn  | <--------------------------> | server |
//	|        | <==========================> |        |
//	+--------+  data: one TCP conn per      +--------+
//	            transfer (stream mode), or N
//	            (MODE E, RetrieveAt/StoreAt)
//
// A Conn owns one control connection. Every blocking method takes a context
// first; cancelling it interrupts the network I/O of that call.
//
// The data plane is the server's: data connections are listened for,
// dialed, admitted and secured by internal/dtp (dtp.Listen, dtp.Dial,
// dtp.Acceptor), striped uploads deal their blocks with
// xfer.StripeRanges and send them with dtp.SendStripes, and every stall
// watchdog is dtp.WatchStall; the client brings only its policy (which
// host may connect, its DCAU/PROT settings, its error texts). On an
// active listener a connection from another host, or one that fails or
// stalls its security handshake, is dropped and the transfer goes on, as
// on the server's passive listener (internal/archtest checks that the
// client makes no data connection of its own).
//
// Implemented:
//
//   - RFC 959: USER/PASS, TYPE I, RETR, STOR, APPE, REST, ALLO, LIST,
//     NLST, MKD, RMD, DELE, RNFR/RNTO, CWD, PWD, ABOR, QUIT; stream mode
//     (MODE S), passive (PASV) and active (PORT) data connections.
//   - GFD.020 MODE E with N parallel data connections (RetrieveAt,
//     StoreAt): the client listens for downloads (OPTS RETR Parallelism,
//     PORT/EPRT) and connects for uploads (PASV/EPSV), as GCT requires;
//     REST range lists, ERET/ESTO windows, 111 range markers, cached data
//     connections (Reuse, like globus-url-copy -fast), SITE
//     RETRBUFSIZE/STORBUFSIZE, per-connection progress.
//   - Session: restartable transfers that redial and resume with REST
//     after a broken control or data connection or a stall.
//   - RFC 2389: FEAT, cached per session.
//   - RFC 2428: EPSV (preferred; falls back to PASV on 500/502 for the rest
//     of the session) and EPRT (falls back to PORT on IPv4).
//   - RFC 3659: SIZE, MDTM, MLST, MLSD, REST STREAM.
//   - MFMT (draft-somers-ftp-mfxx), SITE CHMOD.
//   - GFD.020 (GridFTP): ERET partial retrieve; CKSM (as GCT implements it:
//     "CKSM alg offset length path"); SITE CLIENTINFO.
//   - GSI (Config.GSI, gsiftp://): RFC 2228 AUTH GSSAPI with ADAT tokens
//     that are bare TLS flights (TLS 1.2 and 1.3), the server's chain
//     checked with GSI's rules against a trust directory and the host name
//     or an expected subject, limited (or full, or no) delegation, ENC
//     commands and 631/632/633 replies; USER :globus-mapping:. Data
//     channels: DCAU A (the default after GSI, self authorization) or N,
//     PBSZ and PROT C/S/P, in stream mode and MODE E, both directions,
//     active and passive (RFC 2228 §3, GFD.020 §3.5; gsi.md §3–§6).
//   - Third-party transfers (ThirdParty, Session.ThirdParty; protocol.md
//     §14): PASV or SPAS on the destination, PORT or SPOR on the source,
//     stream mode or MODE E with OPTS RETR Parallelism, ERET/ESTO windows,
//     the destination's 111/112 markers, restart with the same REST to
//     both servers (§8.3); with GSI each server presents the proxy
//     delegated to it (DCAU A).
//   - Uploads in parts (StoreOptions.Part): ALLO, REST, PART and a MODE E
//     STOR per part, to servers whose FEAT lists PART (Ferry's extension,
//     docs/extensions.md); the server puts the file in place only when
//     the parts cover it.
//   - MODE E downloads into an *os.File splice each block from a plain TCP
//     data connection into the file at its offset (posix.SpliceAt).
//
// Errors: a negative or unexpected reply is returned as a *ReplyError
// (an alias of the wire package's type), so callers can inspect the code
// with errors.As. Errors of the network or of a cancelled context leave the
// Conn closed; see Conn.
//
// Not yet implemented: client striping of transfers to or from the client
// (SPAS/SPOR are used only to steer third-party transfers), delayed
// passive (OPTS PASV AllowDelayed), DCAU S (a given subject), PROT E,
// MIC/CONF commands (ENC is always used).
package client
