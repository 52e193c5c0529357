// Package stripe makes a striped server: one protocol interpreter on a head
// node (the frontend) and a data mover on each data node (GFD.020 §4 striping;
// the Globus striped server's PI/DTP split).
//
// Pool is the frontend's side: it keeps a link to every mover, watches its
// health (heartbeats, reconnect with backoff) and hands each control session
// a Frontend, which implements the PI's DTP interface by driving the movers:
// SPAS makes every mover listen (one address per stripe), SPOR/PORT sends
// every mover the receivers' addresses, PASV/EPSV and stream mode use the
// first mover. Mover is the data node's server (net/http shape: Serve,
// Shutdown): for each frontend session it runs a local DTP (internal/dtp)
// restricted to its stripe and reads or writes its part of the file
// through its storage, which must show the same tree as the frontend's (a
// shared file system). A session's data channel security (GSI DCAU and
// PROT, FTPS PROT) goes to the movers with each request: the DCAU check,
// which a mover verifies with its own trust store, and which credential
// to present: a delegated proxy, sent once per link, else the mover's own
// host credential (security.go).
//
// The frontend–mover protocol (msg.go, no I/O) is framed JSON: a 4-byte
// length, a type byte, a JSON body. A connection starts with a versioned,
// mutually authenticated hello: both sides prove knowledge of a shared
// secret with an HMAC over both nonces and their role; a mover never obeys
// a peer that has not proved it, and gives a peer that has not proved it
// little: handshake frames of at most 1 KiB, a bounded time (and less for
// its first frame), and a bounded number of handshakes at once; when all
// are taken, a new connection takes the slot of the oldest one from the
// source address holding the most, so strangers holding every slot cannot
// lock the frontends out (Mover.admitLocked). A frontend's links to the
// movers outlive its control sessions: the Pool keeps them, idle, for the
// next session, and one spare per mover, so new sessions seldom need a
// handshake at all. After the handshake every frame is sealed with
// AES-256-GCM under per-direction keys derived (HKDF-SHA256) from the
// secret and both nonces, numbered so that a replayed, reordered, forged or
// altered frame drops the link (seal.go). Both sides send heartbeats; a peer
// silent for the heartbeat timeout is dead, which fails a running transfer
// with an error naming the mover instead of hanging the session.
package stripe
