// Package history records every transfer the client makes, and the link
// probes it runs, so that the advisor can choose parameters from what
// worked before. A Store keeps them in SQLite (the default, a file under
// $XDG_DATA_HOME/ferry/) or in PostgreSQL for a site whose hosts and users
// share one history.
//
// Open chooses the back-end from a DSN: "" (the default file), a path,
// a postgres:// URL, or "off". It creates or migrates the schema (the
// numbered files of migrations/). History is never worth a transfer:
// the copy engine opens its store with OpenOrOff, which logs a warning
// and returns Off, a store that records nothing, when the database
// cannot be opened (a PostgreSQL server that cannot be reached within
// ConnectTimeout, a directory that cannot be written), and goes on
// without history. A corrupt SQLite file is moved aside and replaced by
// a new one.
package history

import (
	"context"
	"time"
)

// Endpoint is one end of a transfer or probe.
type Endpoint struct {
	Scheme string // "gsiftp", "ftp", "ftps", "file"
	Host   string // lower case; "" for a local file
	Port   int    // 0 for a local file
	// Domain groups hosts of one site: the registrable domain of a name
	// (publicsuffix eTLD+1), the /24 of an IPv4 address, the /48 of an
	// IPv6 one, "localhost" for loopback; "" for a local file.
	Domain string
}

// Params are the transfer parameters that were used.
type Params struct {
	Mode        string // "S" (stream) or "E" (extended block)
	Parallel    int    // data connections per stripe (-p)
	TCPBuffer   int    // bytes asked for (-tcp-bs); 0: the system's default
	BlockSize   int    // MODE E block payload in bytes; 0: default
	Concurrency int    // files at once (-cc)
	Pipeline    bool   // -pp
	Stripes     int    // stripes used; 0 or 1: not striped
	DCAU        string // "N", "A", "S" or "" when not applicable
	Prot        string // "C", "S", "P" or ""
	Auto        bool   // chosen by the advisor rather than by flags
}

// Link is what was measured of the path between the two ends.
type Link struct {
	RTT         time.Duration // round-trip time; 0 unknown
	Bandwidth   float64       // bottleneck bandwidth, bits per second; 0 unknown
	Retransmits int64         // TCP segments retransmitted (TCP_INFO); -1 unknown
	LossRate    float64       // retransmitted / sent segments; 0 also when unknown
}

// Outcome of a transfer.
const (
	OK        = "ok"
	Failed    = "failed"
	Cancelled = "cancelled"
)

// Record is one transfer of one file.
type Record struct {
	ID           int64
	Start, End   time.Time
	Kind         string // "upload", "download", "third-party", "local"
	Tool         string // "cp", "sync", "shell", "web", "calibrate", ...
	Src, Dst     Endpoint
	SrcPath      string
	DstPath      string
	Size         int64         // file size; -1 unknown
	Bytes        int64         // bytes moved by this run
	Duration     time.Duration // End - Start, kept for queries
	Outcome      string        // OK, Failed or Cancelled
	Error        string        // the error's text when not OK
	Params       Params
	Link         Link
	StreamRates  []float64     // bytes per second of each data connection
	PredictedETA time.Duration // the ETA shown before the start; 0: none
	Tuning       string        // what on-the-fly tuning did, human-readable; "" none
	ClientHost   string        // the host that ran the client
	User         string        // the local user that ran it
}

// Rate is the record's mean rate in bytes per second (0 when unknown).
func (r *Record) Rate() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Bytes) / r.Duration.Seconds()
}

// Probe is one measurement of a link by ferry probe.
type Probe struct {
	ID       int64
	Time     time.Time
	Src, Dst Endpoint // Dst is the zero Endpoint for a probe of one server from this host
	Link     Link
	// MaxBuffer is the largest TCP buffer, in bytes, both ends accept
	// (the smaller of the server's answer to SBUF and this kernel's
	// limit); 0 unknown.
	MaxBuffer int
	Features  []string // the server's FEAT lines, without the leading space
	Note      string   // what the probe did, for the reader ("MODE E 4 streams, 64 MiB ERET")
}

// Filter selects records or probes. The zero Filter selects everything.
type Filter struct {
	Since, Until time.Time // zero: unbounded
	Host         string    // either end's host
	Outcome      string    // "" any
	Limit        int       // 0: no limit; newest first
	// User and Tool, when not "", select the records of that user
	// (Record.User) and tool (Record.Tool); they do not apply to probes.
	User, Tool string
}

// LinkSummary sums the records of one (source host, destination host) pair.
type LinkSummary struct {
	Src, Dst   Endpoint
	Transfers  int
	Failures   int
	Bytes      int64
	MeanRate   float64 // bytes per second over successful transfers
	BestRate   float64
	BestParams Params        // of the fastest successful transfer
	RTT        time.Duration // newest known
	Bandwidth  float64       // newest known, bits per second
	Last       time.Time
}

// BatchAdder is a Store that can store many records at once, cheaper
// than one Add each (one transaction): what a client finishing many
// small files uses, through AddAll.
type BatchAdder interface {
	// AddBatch stores rs (their IDs are ignored, they are not
	// changed). On an error some of them may have been stored.
	AddBatch(ctx context.Context, rs []*Record) error
}

// AddAll stores rs in s: with one AddBatch when s is a BatchAdder, else
// with one Add each. It returns the first error.
func AddAll(ctx context.Context, s Store, rs []*Record) error {
	if b, ok := s.(BatchAdder); ok {
		return b.AddBatch(ctx, rs)
	}
	var first error
	for _, r := range rs {
		if _, err := s.Add(ctx, r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Store keeps records and probes. Implementations are safe for concurrent
// use, by goroutines and by processes sharing the database.
//
// Times read back in UTC, to the microsecond; an empty StreamRates or
// Features reads back nil. A Filter's Since is inclusive and Until
// exclusive (of Record.Start, Probe.Time); Host matches either end,
// whatever its case; Outcome does not apply to probes.
type Store interface {
	// Add stores r (its ID is ignored, r is not changed) and returns
	// the new record's ID.
	Add(ctx context.Context, r *Record) (int64, error)
	// AddProbe stores p and returns its ID, as Add.
	AddProbe(ctx context.Context, p *Probe) (int64, error)
	// Records returns the records f selects, newest first.
	Records(ctx context.Context, f Filter) ([]Record, error)
	// Probes returns the probes f selects, newest first.
	Probes(ctx context.Context, f Filter) ([]Probe, error)
	// Links sums the records f selects per (source host, destination
	// host), the pair used last first; f.Limit bounds the pairs. The
	// ends' scheme, port and domain are those of the pair's newest
	// record; Failures counts outcome Failed; MeanRate is the bytes of
	// the successful transfers over their summed durations.
	Links(ctx context.Context, f Filter) ([]LinkSummary, error)
	Close() error
}
