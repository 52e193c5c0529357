package stripe

// The frontend–mover wire format. No I/O here: frames are built and
// parsed from byte slices, and every parser of peer input is fuzzed.
//
// Frame: [4-byte big-endian body length][1-byte type][JSON body].
//
// Flow of one link (F = frontend, M = mover):
//
//	F: hello{v, role=frontend, nonce_f}
//	M: hello{v, role=mover, nonce_m, proof_m}    or error{text} (version)
//	F: auth{proof_f}                             (after checking proof_m)
//	M: welcome{}                                 or error{text}
//	F: session{control peer, ...}                (session links only)
//	then, every frame sealed (seal.go), requests F→M with a sequence
//	number, replies M→F echoing it; ping both ways every heartbeat interval;
//	credential{chain, key} F→M before the first request that names it.

// Version 3 sends a session's delegated credential once per link instead
// of with every request, and never the frontend's host credential.
//
// Version 2 seals every frame after the handshake; version 1 links were
// plain TCP after it.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// Version is the protocol version a hello carries; peers must agree.
// Version 3: a delegated credential travels in a message of its own, once
// per link, and requests name it; without one a mover uses its own.
const Version = 3

// MaxFrame bounds a frame's body after the handshake. The largest
// messages are a listing's send (MaxListing bytes, base64 in JSON: 4/3 of
// it) and a job or event with maxRestart ranges (about 45 bytes each).
const MaxFrame = 16 << 20

// MaxListing bounds a listing a striped server sends (inline, in JSON).
const MaxListing = 8 << 20

// maxHandshakeFrame bounds a frame's body before the peer has proved the
// secret: a hello, an auth, a welcome or a refusal needs a few hundred
// bytes, and nothing larger is read (or allocated for) from a stranger.
const maxHandshakeFrame = 1 << 10

// headerSize is the length and type prefix of a frame.
const headerSize = 5

// Type is a message type.
type Type byte

// Message types.
const (
	TypeHello      Type = iota + 1 // both: version, role, nonce (mover: proof)
	TypeAuth                       // F→M: proof
	TypeWelcome                    // M→F: authenticated
	TypeError                      // either: a refusal or a failed request (Text)
	TypePing                       // either: heartbeat
	TypeSession                    // F→M: the control session this link serves
	TypePassive                    // F→M: listen for the next transfer
	TypeAddr                       // M→F: the passive address
	TypeSend                       // F→M: send this node's stripes
	TypeReceive                    // F→M: receive into the file
	TypeAbort                      // F→M: stop the running transfer
	TypeEvent                      // M→F: started, progress, ranges
	TypeDone                       // M→F: transfer ended (N bytes, or error)
	TypeReset                      // F→M: drop listener and connections
	TypeCredential                 // F→M: the session's delegated credential
	typeEnd
)

var typeNames = [...]string{"", "hello", "auth", "welcome", "error", "ping", "session", "passive", "addr", "send", "receive", "abort", "event", "done", "reset", "credential"}

func (t Type) String() string {
	if t > 0 && t < typeEnd {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", byte(t))
}

// Msg is every message; a type uses only some fields.
type Msg struct {
	Type Type   `json:"-"`
	Seq  uint64 `json:"seq,omitempty"`

	// Hello, auth.
	Version int    `json:"v,omitempty"`
	Role    string `json:"role,omitempty"`
	Nonce   []byte `json:"nonce,omitempty"`
	Proof   []byte `json:"proof,omitempty"`

	// Error, done: what went wrong; Kind says how to classify it.
	Text string  `json:"text,omitempty"`
	Kind ErrKind `json:"kind,omitempty"`

	// Session.
	ControlPeer  netip.AddrPort `json:"peer,omitzero"`
	AllowForeign bool           `json:"foreign,omitempty"`
	Stall        time.Duration  `json:"stall,omitempty"`

	// Passive, addr, send, receive.
	IPv4   bool             `json:"ipv4,omitempty"`
	Buffer int              `json:"buf,omitempty"`
	Addr   netip.AddrPort   `json:"addr,omitzero"`
	Addrs  []netip.AddrPort `json:"addrs,omitempty"`
	Job    *Job             `json:"job,omitempty"`
	Data   []byte           `json:"data,omitempty"` // a listing's bytes
	Sec    *Security        `json:"sec,omitempty"`  // data channel security; nil: none
	Upload *Upload          `json:"up,omitempty"`   // receive: the shared upload to write into (s3.go)

	// Credential: a delegated proxy, DER certificates (leaf first) and
	// the PKCS #8 key of the leaf.
	Chain [][]byte `json:"chain,omitempty"`
	Key   []byte   `json:"key,omitempty"`

	// Event, done.
	Event *xfer.Event `json:"ev,omitempty"`
	N     int64       `json:"n,omitempty"`
}

// ErrKind classifies a failed transfer so the frontend can rebuild the
// error the PI maps to a reply code.
type ErrKind int

// Error kinds.
const (
	KindOther     ErrKind = iota
	KindOpen              // data channel could not be opened (425)
	KindData              // data channel broke (426)
	KindStorage           // storage failed (451)
	KindNoSpace           // storage full (452)
	KindNoAddress         // no data channel set up (425)
	KindAborted           // stopped by the frontend
)

// AppendFrame appends m's frame to b.
func AppendFrame(b []byte, m *Msg) ([]byte, error) {
	if m.Type == 0 || m.Type >= typeEnd {
		return b, fmt.Errorf("stripe: cannot encode message %v", m.Type)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return b, fmt.Errorf("stripe: encode %v: %w", m.Type, err)
	}
	if len(body) > MaxFrame {
		return b, fmt.Errorf("stripe: %v message of %d bytes exceeds %d", m.Type, len(body), MaxFrame)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, byte(m.Type))
	return append(b, body...), nil
}

// ParseHeader reads a frame's header: the body length and type.
func ParseHeader(h []byte) (n int, t Type, err error) {
	return parseHeader(h, MaxFrame)
}

// parseHeader reads a frame's header, refusing a body over limit bytes.
func parseHeader(h []byte, limit int) (n int, t Type, err error) {
	if len(h) < headerSize {
		return 0, 0, errors.New("stripe: short frame header")
	}
	l := binary.BigEndian.Uint32(h)
	t = Type(h[4])
	if uint64(l) > uint64(limit) {
		return 0, 0, fmt.Errorf("stripe: frame of %d bytes exceeds %d", l, limit)
	}
	if t == 0 || t >= typeEnd {
		return 0, 0, fmt.Errorf("stripe: unknown message type %d", h[4])
	}
	return int(l), t, nil
}

// ParseBody decodes the body of a frame of type t.
func ParseBody(t Type, body []byte) (*Msg, error) {
	m := new(Msg)
	if err := json.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("stripe: bad %v message: %w", t, err)
	}
	m.Type = t
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseFrame decodes the first frame of b and returns its length; n == 0
// means b holds no whole frame yet.
func ParseFrame(b []byte) (m *Msg, n int, err error) {
	if len(b) < headerSize {
		return nil, 0, nil
	}
	l, t, err := ParseHeader(b)
	if err != nil {
		return nil, 0, err
	}
	if len(b) < headerSize+l {
		return nil, 0, nil
	}
	m, err = ParseBody(t, b[headerSize:headerSize+l])
	return m, headerSize + l, err
}

// check refuses values a peer could use to make us misbehave.
func (m *Msg) check() error {
	bad := func(what string) error { return fmt.Errorf("stripe: bad %v message: %s", m.Type, what) }
	if len(m.Nonce) > 64 || len(m.Proof) > 64 {
		return bad("nonce or proof too long")
	}
	if len(m.Addrs) > 64 {
		return bad("too many addresses")
	}
	if m.Buffer < 0 || m.Buffer > 1<<30 {
		return bad("buffer size")
	}
	if r := m.Job; r != nil {
		if what := r.problem(); what != "" {
			return bad(what)
		}
	}
	if u := m.Upload; u != nil && (u.ID == "" || len(u.ID) > 1024 || u.PartSize <= 0) {
		return bad("upload")
	}
	if m.Sec != nil {
		if err := m.Sec.check(); err != nil {
			return bad(err.Error())
		}
	}
	if ev := m.Event; ev != nil {
		if len(ev.Ranges) > maxRestart || ev.Stripe < 0 || ev.Stripe > 64 {
			return bad("event")
		}
	}
	if len(m.Chain) > 16 || (m.Type == TypeCredential && (len(m.Chain) == 0 || len(m.Key) == 0)) {
		return bad("credential")
	}
	if m.Type == TypeHello && len(m.Nonce) < nonceSize {
		return bad("nonce too short")
	}
	return nil
}

// problem names the first value of a job from a peer that is out of
// range (for check's error), or returns "" when there is none.
func (r *Job) problem() string {
	switch {
	case r.Mode != xfer.ModeStream && r.Mode != xfer.ModeEBlock:
		return "mode"
	case r.Type != xfer.TypeImage && r.Type != xfer.TypeASCII:
		return "type"
	case r.Layout != xfer.LayoutBlocked && r.Layout != xfer.LayoutPartitioned:
		return "layout"
	case len(r.Restart) > maxRestart:
		return "too many restart ranges"
	case r.Perf < 0 || r.Ranges < 0:
		return "marker interval"
	case r.Offset < 0 || r.StoreOffset < 0 || r.Parallelism < 0 || r.Parallelism > 64:
		return "offsets or parallelism"
	case r.Senders < 0 || r.Senders > 64 || r.Index < 0 || (r.Senders > 0 && r.Index >= r.Senders):
		return "sender index"
	case r.BlockSize < 0 || r.BlockSize > 64<<20 || r.StripeBlockSize < 0:
		return "block size"
	}
	for _, rg := range r.Restart {
		if rg.Start < 0 || rg.End < rg.Start {
			return "restart range"
		}
	}
	return ""
}

// nonceSize is the length of a hello's nonce.
const nonceSize = 32

// Roles in a hello.
const (
	roleFrontend = "frontend"
	roleMover    = "mover"
)

// proof is what role shows to prove it knows secret: an HMAC over the
// role and both nonces, its own first, so no proof can be replayed for
// the other role or another connection.
func proof(secret []byte, role string, own, peer []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("ferry-stripe-v2\x00" + role + "\x00"))
	h.Write(own)
	h.Write(peer)
	return h.Sum(nil)
}

// checkProof reports whether p is role's proof for the nonces.
func checkProof(secret []byte, role string, own, peer, p []byte) bool {
	return hmac.Equal(proof(secret, role, own, peer), p)
}

// maxRestart bounds the ranges of a job or an event.
const maxRestart = 100000

// Job is a transfer request on the wire: xfer.Request's fields, spelled out.
type Job struct {
	Path            string        `json:"path"`
	Mode            xfer.Mode     `json:"mode"`
	Type            xfer.Type     `json:"type"`
	Offset          int64         `json:"off,omitempty"`
	Length          int64         `json:"len"`
	Restart         []xfer.Range  `json:"rest,omitempty"`
	StoreOffset     int64         `json:"store,omitempty"`
	Parallelism     int           `json:"par,omitempty"`
	BlockSize       int           `json:"bs,omitempty"`
	Layout          xfer.Layout   `json:"layout,omitempty"`
	StripeBlockSize int64         `json:"sbs,omitempty"`
	Size            int64         `json:"size"`
	Perf            time.Duration `json:"perf,omitempty"`
	Ranges          time.Duration `json:"ranges,omitempty"`
	Senders         int           `json:"senders,omitempty"`
	Index           int           `json:"index,omitempty"`
	Listing         bool          `json:"listing,omitempty"`
}

// jobOf describes req for the wire, with the path as the mover sees it.
func jobOf(req *xfer.Request, path string) *Job {
	return &Job{
		Path: path, Mode: req.Mode, Type: req.Type, Offset: req.Offset, Length: req.Length,
		Restart: req.Restart.Ranges(), StoreOffset: req.StoreOffset, Parallelism: req.Parallelism,
		BlockSize: req.BlockSize, Layout: req.StripeLayout, StripeBlockSize: req.StripeBlockSize,
		Size: req.Size, Perf: req.PerfInterval, Ranges: req.RangeInterval,
		Senders: req.Senders, Index: req.SenderIndex, Listing: req.Listing,
	}
}

// request is the job as the mover's DTP takes it.
func (j *Job) request() *xfer.Request {
	req := &xfer.Request{
		Path: j.Path, Mode: j.Mode, Type: j.Type, Offset: j.Offset, Length: j.Length,
		StoreOffset: j.StoreOffset, Parallelism: j.Parallelism, BlockSize: j.BlockSize,
		StripeLayout: j.Layout, StripeBlockSize: j.StripeBlockSize, Size: j.Size,
		PerfInterval: j.Perf, RangeInterval: j.Ranges,
		Senders: j.Senders, SenderIndex: j.Index, Listing: j.Listing,
	}
	for _, r := range j.Restart {
		req.Restart.Add(r)
	}
	return req
}
