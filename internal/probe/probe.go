// Package probe measures the link to a GridFTP server within a few
// seconds, for ferry probe and the advisor (issue 15, item 3):
//
//   - the control channel's round-trip time, the median of a few NOOPs;
//   - the server's features (FEAT, as read at login);
//   - the largest TCP buffer the server accepts (SBUF with falling
//     sizes) and this host's kernel limits (KernelLimits);
//   - the throughput of a short MODE E burst: a bounded partial
//     retrieve (ERET) of a file, from a few parallel streams, with the
//     kernel's TCP_INFO of each data connection (client.Progress.Conns):
//     retransmits, RTT, delivery rate;
//   - optionally, the same for a short upload (ESTO) to a path given by
//     the caller, which is the direction where this end sends and so sees
//     the loss (retransmits) itself.
//
// Run takes a logged-in *client.Conn: it never dials. The result is a
// history.Probe that the caller stores (history.Store.AddProbe).
package probe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/progress"
)

// Options tune Run. The zero value works.
type Options struct {
	// Endpoint is the server's Endpoint, stored as the probe's Src.
	Endpoint history.Endpoint
	// Path is the file to read for the burst; a directory (or "") means
	// its largest regular file, found with a listing. Without a file the
	// probe measures no bandwidth.
	Path string
	// Streams is the parallelism of the burst; 0 means DefaultStreams.
	Streams int
	// MaxBytes bounds the bytes read (and written) by each burst; 0
	// means DefaultMaxBytes.
	MaxBytes int64
	// Duration is the rough time each burst should take; 0 means
	// DefaultDuration. A burst is cut off at twice this.
	Duration time.Duration
	// NOOPs is how many NOOPs time the control channel; 0 means 5.
	NOOPs int
	// UploadPath, when not "", is a path on the server to upload a burst
	// of zeros to (and delete afterwards) to measure loss as the sender.
	UploadPath string
	// Kernel is this host's limits; nil means KernelLimits().
	Kernel *advisor.Kernel
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultStreams  = 4
	DefaultMaxBytes = 256 << 20
	DefaultDuration = 1500 * time.Millisecond
	// warmBytes is the first, sizing burst.
	warmBytes = 4 << 20
)

// sbufTries are the buffer sizes offered to the server, largest first.
var sbufTries = []int{1 << 30, 256 << 20, 64 << 20, 16 << 20, 4 << 20, 1 << 20}

// Burst is what one timed transfer measured.
type Burst struct {
	Direction   string        // "download" or "upload"
	Path        string        // the file read or written
	Streams     int           // data connections
	Bytes       int64         // bytes moved
	Elapsed     time.Duration // from the command to the last byte
	Rate        float64       // bytes per second while data moved
	Retransmits int64         // segments this end retransmitted; -1 unknown
	SegsOut     int64         // segments this end sent
	TCPRTT      time.Duration // the data connections' mean smoothed RTT; 0 unknown
	RcvBuf      int           // SO_RCVBUF (download) or SO_SNDBUF (upload) granted, bytes; 0 unknown
}

// Result is a probe with the details behind it.
type Result struct {
	history.Probe
	RTTs      []time.Duration // each NOOP's round trip
	ServerBuf int             // the largest SBUF the server accepted; 0 none
	Kernel    advisor.Kernel
	Bursts    []Burst
}

// Run probes the server c is logged in to. It returns what it could
// measure: a failed burst or SBUF leaves its fields unknown and is named
// in Note; an error is returned only when the control connection fails.
func Run(ctx context.Context, c *client.Conn, opts Options) (*Result, error) {
	o := opts
	o.Streams = cmp.Or(o.Streams, DefaultStreams)
	o.MaxBytes = cmp.Or(o.MaxBytes, DefaultMaxBytes)
	o.Duration = cmp.Or(o.Duration, DefaultDuration)
	o.NOOPs = cmp.Or(o.NOOPs, 5)
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Result{}
	if o.Kernel != nil {
		r.Kernel = *o.Kernel
	} else {
		r.Kernel = KernelLimits()
	}
	r.Time = o.Now().UTC()
	r.Src = o.Endpoint
	r.Link.Retransmits = -1
	r.Features = features(c)
	var notes []string

	// Control-channel RTT.
	for range o.NOOPs {
		t := time.Now()
		rep, err := c.Do(ctx, "NOOP")
		if err != nil {
			return r, fmt.Errorf("probe: NOOP: %w", err)
		}
		if rep.Code/100 != 2 {
			notes = append(notes, fmt.Sprintf("NOOP answered %d", rep.Code))
			break
		}
		r.RTTs = append(r.RTTs, time.Since(t))
	}
	if len(r.RTTs) > 0 {
		s := slices.Clone(r.RTTs)
		slices.Sort(s)
		r.Link.RTT = s[len(s)/2]
	}

	// The download burst.
	file, size, err := pickFile(ctx, c, o.Path)
	switch {
	case err != nil:
		notes = append(notes, fmt.Sprintf("no burst: %v", err))
	default:
		b, err := download(ctx, c, file, size, o)
		if b.Bytes > 0 {
			r.Bursts = append(r.Bursts, b)
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("download burst: %v", err))
			if broken(ctx, c, err) {
				return r, fmt.Errorf("probe: %w", err)
			}
		}
	}
	if o.UploadPath != "" {
		b, err := upload(ctx, c, o.UploadPath, o)
		if b.Bytes > 0 {
			r.Bursts = append(r.Bursts, b)
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("upload burst: %v", err))
			if broken(ctx, c, err) {
				return r, fmt.Errorf("probe: %w", err)
			}
		}
	}
	for _, b := range r.Bursts {
		r.Link.Bandwidth = max(r.Link.Bandwidth, 8*b.Rate)
		if b.Direction == "upload" && b.Retransmits >= 0 {
			r.Link.Retransmits = b.Retransmits
			if b.SegsOut > 0 {
				r.Link.LossRate = float64(b.Retransmits) / float64(b.SegsOut)
			}
		}
		notes = append(notes, b.String())
	}
	if r.Link.Retransmits < 0 && len(r.Bursts) > 0 {
		notes = append(notes, "loss unknown: this end only received (give an upload path to measure it)")
	}

	// SBUF: the largest size the server takes.
	sb, err := serverBuffer(ctx, c)
	if err != nil {
		return r, fmt.Errorf("probe: %w", err)
	}
	r.ServerBuf = sb
	local := min(nonzero(r.Kernel.RmemMax), nonzero(r.Kernel.WmemMax))
	switch {
	case sb > 0 && local < maxInt:
		r.MaxBuffer = min(sb, local)
	case sb > 0:
		r.MaxBuffer = sb
	case local < maxInt:
		r.MaxBuffer = local
	}
	if sb > 0 {
		notes = append(notes, fmt.Sprintf("server accepts SBUF %s (its kernel may grant less)", progress.Bytes(float64(sb))))
	} else {
		notes = append(notes, "server refuses SBUF")
	}
	r.Note = strings.Join(notes, "; ")
	return r, nil
}

const maxInt = int(^uint(0) >> 1)

func nonzero(n int) int {
	if n <= 0 {
		return maxInt
	}
	return n
}

// broken reports whether err left the control connection unusable.
func broken(ctx context.Context, c *client.Conn, err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, rerr := c.Do(ctx, "NOOP")
	return rerr != nil
}

func (b Burst) String() string {
	dir := "from"
	if b.Direction == "upload" {
		dir = "to"
	}
	s := fmt.Sprintf("%s burst: %s %s %s in %s with %d stream(s), %s",
		b.Direction, progress.Bytes(float64(b.Bytes)), dir, b.Path, b.Elapsed.Round(time.Millisecond), b.Streams, progress.Bits(8*b.Rate))
	if b.Direction == "upload" && b.Retransmits >= 0 {
		s += fmt.Sprintf(", %d of %d segments retransmitted", b.Retransmits, b.SegsOut)
	}
	return s
}

// features returns the FEAT lines, sorted.
func features(c *client.Conn) []string {
	var out []string
	for name, rest := range c.Features() {
		if rest != "" {
			name += " " + rest
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// pickFile returns the file to read: p if it is a regular file, else the
// largest regular file of the directory p ("" is the login directory).
func pickFile(ctx context.Context, c *client.Conn, p string) (string, int64, error) {
	if p != "" && !strings.HasSuffix(p, "/") {
		en, err := c.Stat(ctx, p)
		if err == nil && (en.Type == "file" || en.Type == "") && en.Size > 0 {
			return p, en.Size, nil
		}
		if err == nil && en.Type == "file" {
			return "", 0, fmt.Errorf("%s is empty", p)
		}
		if err != nil {
			var re *client.ReplyError
			if !errors.As(err, &re) {
				return "", 0, err
			}
			// MLST refused: try SIZE, then take p as a directory.
			if n, serr := c.Size(ctx, p); serr == nil && n > 0 {
				return p, n, nil
			}
		}
	}
	dir := p
	if dir == "" {
		dir = "."
	}
	list, err := c.List(ctx, dir)
	if err != nil {
		return "", 0, fmt.Errorf("list %s: %w", dir, err)
	}
	var best client.Entry
	for _, en := range list {
		if en.Type == "file" && en.Size > best.Size {
			best = en
		}
	}
	if best.Size <= 0 {
		return "", 0, fmt.Errorf("no non-empty file in %s to read", dir)
	}
	name := best.Name
	if !strings.HasPrefix(name, "/") {
		name = path.Join(dir, name)
	}
	return name, best.Size, nil
}

// discard is an io.WriterAt that keeps nothing.
type discard struct{}

func (discard) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// zeros is an io.ReaderAt of size zero bytes.
type zeros struct{ size int64 }

func (z zeros) ReadAt(p []byte, off int64) (int, error) {
	if off >= z.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), z.size-off))
	clear(p[:n])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// sampler keeps the progress of a burst: when data first moved, the
// last snapshot and when it was taken.
type sampler struct {
	mu     sync.Mutex
	firstT time.Time
	firstB int64
	lastT  time.Time
	last   client.Progress
}

func (s *sampler) add(p client.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.firstT.IsZero() && p.Bytes > 0 {
		s.firstT, s.firstB = now, p.Bytes
	}
	s.lastT, s.last = now, p
}

// fill sets b's rate and TCP facts from the samples; the rate is over
// the time data moved when that span is long enough, else over all of
// elapsed.
func (s *sampler) fill(b *Burst, n int64, elapsed time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b.Bytes, b.Elapsed = n, elapsed
	span := s.lastT.Sub(s.firstT)
	if !s.firstT.IsZero() && span >= 200*time.Millisecond && s.last.Bytes > s.firstB {
		b.Rate = float64(s.last.Bytes-s.firstB) / span.Seconds()
	} else if elapsed > 0 {
		b.Rate = float64(n) / elapsed.Seconds()
	}
	b.Retransmits = -1
	var rtt time.Duration
	var nrtt int
	for _, cs := range s.last.Conns {
		if cs.SegsOut == 0 && cs.RTT == 0 {
			continue
		}
		if b.Retransmits < 0 {
			b.Retransmits = 0
		}
		b.Retransmits += cs.Retransmits
		b.SegsOut += cs.SegsOut
		if cs.RTT > 0 {
			rtt += cs.RTT
			nrtt++
		}
		if b.Direction == "download" {
			b.RcvBuf = max(b.RcvBuf, cs.RcvBuf)
		} else {
			b.RcvBuf = max(b.RcvBuf, cs.SndBuf)
		}
	}
	if nrtt > 0 {
		b.TCPRTT = rtt / time.Duration(nrtt)
	}
}

// burstSize returns how many bytes the main burst should move: what the
// warm-up rate moves in o.Duration, within [warmBytes, o.MaxBytes].
func burstSize(rate float64, o Options) int64 {
	n := int64(rate * o.Duration.Seconds())
	return max(min(n, o.MaxBytes), warmBytes)
}

// download times partial retrieves of file: a small warm-up to size the
// burst, then one that should take about o.Duration.
func download(ctx context.Context, c *client.Conn, file string, size int64, o Options) (Burst, error) {
	return timed(ctx, c, "download", file, size, o.Streams, 0, o)
}

// upload times partial stores of zeros to p, then deletes p.
func upload(ctx context.Context, c *client.Conn, p string, o Options) (Burst, error) {
	b, err := timed(ctx, c, "upload", p, o.MaxBytes, o.Streams, 0, o)
	if derr := c.Delete(ctx, p); err == nil && derr != nil {
		var re *client.ReplyError
		if !errors.As(derr, &re) {
			err = derr
		}
	}
	return b, err
}

// timed runs a warm-up transfer of at most warmBytes, then, when more
// is allowed, one sized by the warm-up's rate to last about o.Duration,
// and returns the last. size bounds a download (the file's size); an
// upload writes zeros to p.
func timed(ctx context.Context, c *client.Conn, dir, p string, size int64, streams, buffer int, o Options) (Burst, error) {
	n := min(size, o.MaxBytes, warmBytes)
	b, err := once(ctx, c, dir, p, n, streams, buffer, o)
	if err != nil || n >= size || n >= o.MaxBytes {
		return b, err
	}
	b2, err := once(ctx, c, dir, p, min(size, burstSize(b.Rate, o)), streams, buffer, o)
	if b2.Bytes > 0 {
		b = b2
	}
	return b, err
}

// once times one transfer of n bytes, cut off at 2 × o.Duration + 5 s.
func once(ctx context.Context, c *client.Conn, dir, p string, n int64, streams, buffer int, o Options) (Burst, error) {
	b := Burst{Direction: dir, Path: p, Streams: streams}
	var s sampler
	ctx, cancel := context.WithTimeout(ctx, 2*o.Duration+5*time.Second)
	defer cancel()
	t := time.Now()
	var got int64
	var err error
	if dir == "download" {
		got, err = c.RetrieveAt(ctx, p, discard{}, &client.RetrieveOptions{
			Length: n, Parallel: streams, ModeE: true, TCPBuffer: buffer,
			Progress: s.add, ProgressInterval: 50 * time.Millisecond,
		})
	} else {
		got, err = c.StoreAt(ctx, p, zeros{n}, n, &client.StoreOptions{
			Parallel: streams, ModeE: true, TCPBuffer: buffer,
			Progress: s.add, ProgressInterval: 50 * time.Millisecond,
		})
	}
	s.fill(&b, got, time.Since(t))
	return b, err
}

// serverBuffer offers SBUF with falling sizes and returns the first one
// the server accepts, 0 when it takes none; then it sets SBUF 0 (the
// kernel's automatic tuning) for the transfers that follow on c. GCT and
// Ferry accept any size they can parse (Ferry up to 1 GiB) and let the
// kernel cap it silently, so the answer is an upper bound.
func serverBuffer(ctx context.Context, c *client.Conn) (int, error) {
	got := 0
	for _, n := range sbufTries {
		rep, err := c.Do(ctx, "SBUF %d", n)
		if err != nil {
			return 0, fmt.Errorf("SBUF: %w", err)
		}
		if rep.Code/100 == 2 {
			got = n
			break
		}
		if rep.Code == 500 {
			break // not implemented (GCT says 502 for a size it will not take)
		}
	}
	if got > 0 {
		if _, err := c.Do(ctx, "SBUF 0"); err != nil {
			return got, fmt.Errorf("SBUF: %w", err)
		}
	}
	return got, nil
}
