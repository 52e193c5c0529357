// Package privsep is a DSI back-end whose operations run as another local
// user: the piece that lets a server running as root act as the account a
// login was mapped to (GCT does the same with setuid in a forked process per
// session; Go cannot change the user of one goroutine, so Ferry keeps a
// helper process per account instead).
//
//	  ferry serve (root)                          ferry privsep-helper (uid of the account)
//	+--------------------+   SOCK_SEQPACKET pair  +-----------------------------+
//	| privsep.FS         | ---- request (op) ---> | privsep.Serve               |
//	|  (dsi.Storage)     | <--- reply / error --- |  over dsi/posix on -root    |
//	|                    | <--- open fd (SCM_RIGHTS) for Open / Create      |
//	|  posix.Reader/     |                        +-----------------------------+
//	|  posix.Writer on   |     file data never crosses the socket pair: the
//	|  the passed fd     |     server reads and writes the descriptor itself,
//	+--------------------+     so sendfile(2) and splice(2) keep working
//
// Every name lookup, permission check and file creation happens in the
// helper, so the kernel checks it against the account's uid, gid and groups,
// and new files belong to the account. The helper serves its root through
// dsi/posix, whose os.Root keeps names and symbolic links inside it.
//
// # Protocol
//
// One message per packet, at most maxPacket bytes, each starting with an
// 8-byte header: version (1), op, flags, a zero byte and a big-endian
// request id. Requests carry the op's arguments; replies echo op and id.
// Every request but hello starts with a 32-bit root number: 0 is the
// directory the helper serves, and a sub request (dsi.Sub) makes the helper
// open a directory below a root as an os.Root of its own and answer its
// number, which later requests name and a release request forgets. The
// helper resolves each name, and each symbolic link, inside the root the
// request names, so a home confined with dsi.Sub stays confined.
// A reply with flagError carries a DSI error code and a text; a ReadDir
// reply may span several packets, all but the last with flagMore. Open and
// Create replies carry exactly one descriptor as SCM_RIGHTS. Strings are a
// 16-bit length and bytes, integers big-endian. Either side treats a
// malformed packet (size, version, header, descriptors where none belong)
// as the end of the conversation; the helper answers a request whose
// arguments do not decode, or whose name is not clean and absolute, with
// dsi.ErrInvalid. The server checks that a passed descriptor is a regular
// file before using it, and that the helper runs as the expected uid/gid.
package privsep
