// Package client is a GridFTP client: an FTP client (RFC 959) with the
// extensions GridFTP servers such as the Grid Community Toolkit (GCT) server
// speak. It is a library of its own; the ferry command-line tools are a thin
// layer over it.
//
//	+--------+  control: commands, replies  +--------+
//	|  Conn  | <--------------------------> | server |
//	|        | <==========================> |        |
//	+--------+  data: one TCP conn per      +--------+
//	            transfer (stream mode)
//
// A Conn owns one control connection. Every blocking method takes a context
// first; cancelling it interrupts the network I/O of that call.
//
// Implemented:
//
//   - RFC 959: USER/PASS, TYPE I, RETR, STOR, APPE, REST, ALLO, LIST,
//     NLST, MKD, RMD, DELE, RNFR/RNTO, CWD, PWD, ABOR, QUIT; stream mode
//     (MODE S) only, passive (PASV) and active (PORT) data connections.
//   - RFC 2389: FEAT, cached per session.
//   - RFC 2428: EPSV (preferred; falls back to PASV on 500/502 for the rest
//     of the session) and EPRT (falls back to PORT on IPv4).
//   - RFC 3659: SIZE, MDTM, MLST, MLSD, REST STREAM.
//   - MFMT (draft-somers-ftp-mfxx), SITE CHMOD.
//   - GFD.020 (GridFTP): ERET partial retrieve; CKSM (as GCT implements it:
//     "CKSM alg offset length path"); SITE CLIENTINFO.
//
// Errors: a negative or unexpected reply is returned as a *ReplyError
// (an alias of the wire package's type), so callers can inspect the code
// with errors.As. Errors of the network or of a cancelled context leave the
// Conn closed; see Conn.
//
// Not yet implemented: MODE E (parallel and striped transfers), GSI
// (AUTH GSSAPI, DCAU, PROT), third-party transfers, restart markers.
package client
