package xfer

import "time"

// Mode is the FTP transmission mode of a transfer (RFC 959 MODE, GFD.020 §3.4).
type Mode byte

// Transmission modes.
const (
	ModeStream Mode = 'S' // RFC 959 stream mode: one connection, EOF by close
	ModeEBlock Mode = 'E' // GridFTP extended block mode: many connections, 17-byte headers
)

// Type is the FTP representation type (RFC 959 TYPE).
type Type byte

// Representation types.
const (
	TypeImage Type = 'I' // bytes as they are
	TypeASCII Type = 'A' // network ASCII: LF on disk, CRLF on the wire (stream mode only)
)

// Request describes one transfer for a data mover: which bytes, how framed.
// It plays the part of Globus's globus_gfs_transfer_info_t: the PI fills it
// in from the session's state, the DTP executes it.
type Request struct {
	// Path is the storage path (or a label such as "LIST /dir" for listings).
	Path string
	Mode Mode
	Type Type
	// Offset and Length select a window of the source (ERET P): a virtual
	// file whose byte 0 is file byte Offset; MODE E block offsets and
	// markers count from there. Length < 0 means to the end.
	Offset, Length int64
	// Restart lists the byte ranges, in virtual-file coordinates, that the
	// receiver already has (REST); a sender skips them. In stream mode only
	// a single range from 0 is meaningful.
	Restart RangeSet
	// StoreOffset is where byte 0 of the incoming data lands (ESTO A, REST n
	// before STOR in stream mode, APPE at the end).
	StoreOffset int64
	// Parallelism is the number of data connections a MODE E sender opens.
	Parallelism int
	// BlockSize is the MODE E block size a sender uses; 0 means the default.
	BlockSize int
	// StripeLayout and StripeBlockSize say how a sender with several
	// stripes (SPOR) deals the file to them (OPTS RETR StripeLayout,
	// BlockSize); a zero StripeBlockSize means DefaultStripeBlockSize.
	StripeLayout    Layout
	StripeBlockSize int64
	// Senders and SenderIndex describe one data node of a striped sender:
	// the file is dealt to max(Senders, receiving stripes) stripes and this
	// DTP sends those whose number is SenderIndex modulo Senders. Senders
	// <= 1 means a single sender that sends everything.
	Senders, SenderIndex int
	// Listing marks generated data (LIST, NLST, MLSD) rather than a file.
	Listing bool
	// Size is the announced size of incoming data (ALLO), or -1: a MODE E
	// block reaching past it is refused.
	Size int64
	// PerfInterval and RangeInterval are how often the DTP reports
	// EventProgress and EventRanges while the transfer runs; 0 means never.
	// A DTP that reports at all also reports once at the start (progress)
	// and once at the end (both).
	PerfInterval, RangeInterval time.Duration
}

// Layout is how a striped transfer deals a file to its stripes (GFD.020 §4.4).
type Layout int

// Stripe layouts.
const (
	LayoutBlocked     Layout = iota // stripe i gets blocks i, i+k, i+2k, ... of StripeBlockSize
	LayoutPartitioned               // stripe i gets the i-th of k contiguous parts
)

// DefaultStripeBlockSize is the block of the Blocked layout unless set (GCT: 1 MiB).
const DefaultStripeBlockSize = 1 << 20

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventStarted: the data channel is ready and bytes may flow; the PI answers
	// 150 (or 125 when Reused).
	EventStarted EventKind = iota + 1
	// EventProgress: Bytes transferred so far on Stripe (112 performance markers).
	EventProgress
	// EventRanges: Ranges newly committed to storage (111 restart markers).
	EventRanges
	// EventConns: once, as a transfer ends, what its data connections did:
	// Streams, Stripes, Opened and Retransmits (accounting, metrics).
	EventConns
)

// Event is one step of a running transfer, reported by a data mover to
// whoever watches the transfer (the PI's markers, history, progress displays).
type Event struct {
	Kind    EventKind
	Time    time.Time
	Reused  bool    // EventStarted: cached data connections were reused
	Stripe  int     // EventProgress
	Stripes int     // EventProgress: how many stripes the transfer has; 0 means 1
	Bytes   int64   // EventProgress: cumulative bytes on Stripe
	Ranges  []Range // EventRanges: newly committed ranges
	// EventConns: the data connections the transfer used (Streams, over
	// Stripes), how many of them it opened (the others were cached), and
	// the TCP segments they retransmitted during it.
	Streams     int
	Opened      int
	Retransmits int64
	// EventConns: the sender's chrono statistics of the data connections
	// during the transfer, summed over them (netopt.TCPStats: Busy
	// includes RwndLimited and SndbufLimited), and how many connections
	// they were read from (0: unknown). Zero on the receiving side.
	Busy, RwndLimited, SndbufLimited time.Duration
	Measured                         int
}

// Missing is how many bytes of an upload of Size bytes are still to
// come: those Restart does not hold already. Zero when Size is unknown.
func (r *Request) Missing() int64 {
	if r.Size < 0 {
		return 0
	}
	var want int64
	for _, g := range r.Restart.Missing(Range{Start: 0, End: r.Size}) {
		want += g.Len()
	}
	return want
}
