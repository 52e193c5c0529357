// Package wire is Ferry's control-channel vocabulary: the pieces of text that
// travel on a GridFTP control connection, and nothing else. It parses and
// formats, and never dials, listens or writes; the only I/O it does is reading
// from an io.Reader handed to LineReader or ReplyReader.
//
// Implemented:
//
//   - RFC 959 (FTP): command and reply framing (§4.1, §4.2), Telnet IAC
//     stripping, PORT and PASV host-ports, LIST lines in the Unix "ls -l"
//     shape that servers in the field send.
//   - RFC 2389 (FEAT and OPTS): ParseFeatures, FeatMLST, ParseFactSet.
//   - RFC 2428 (FTP extensions for IPv6 and NATs): EPRT and EPSV.
//   - RFC 3659 (Extensions to FTP): MLST/MLSD fact lines and the
//     YYYYMMDDHHMMSS[.sss] time values of MDTM and Modify.
//   - GFD.020 (GridFTP): SPAS/SPOR host-port lists, 112 and 111 marker
//     replies (as multi-line replies), and the quirks of the Globus reference
//     server (GCT) that a client must tolerate, such as its broken
//     single-line 501 replies that span two physical lines.
//
// Byte ranges used by REST and 111 markers live in package xfer.
package wire
