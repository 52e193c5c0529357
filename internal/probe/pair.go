package probe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/history"
)

// PairOptions tune RunPair. The zero value of each field but the
// connections' paths works as in Options.
type PairOptions struct {
	// Src and Dst are the two servers' Endpoints, stored in the probe.
	Src, Dst history.Endpoint
	// SrcPath is the file to read on the source (a directory: its
	// largest file).
	SrcPath string
	// DstDir is the directory on the destination where the burst is
	// written, to a file named ".ferry-probe-<time>" that is deleted
	// afterwards.
	DstDir string
	// Streams, MaxBytes and Duration are as in Options.
	Streams  int
	MaxBytes int64
	Duration time.Duration
	// SrcRTT and DstRTT are the control RTTs from here to each server
	// (Run measures them); the probe's RTT is the longer, a stand-in for
	// the servers' own round trip, which cannot be seen from here.
	SrcRTT, DstRTT time.Duration
	// MaxBuffer is stored in the probe (the smaller of what each end
	// accepts); 0 unknown.
	MaxBuffer int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// RunPair times a third-party burst from the server of src to the
// server of dst (a bounded ERET on the source, ESTO on the destination,
// MODE E with Streams connections), and returns the probe of the pair.
// The data connections are the servers', so no TCP_INFO is seen:
// Retransmits is -1.
func RunPair(ctx context.Context, src, dst *client.Conn, opts PairOptions) (*Result, error) {
	o := Options{Streams: cmp.Or(opts.Streams, DefaultStreams), MaxBytes: cmp.Or(opts.MaxBytes, DefaultMaxBytes), Duration: cmp.Or(opts.Duration, DefaultDuration)}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	r := &Result{}
	r.Time = now().UTC()
	r.Src, r.Dst = opts.Src, opts.Dst
	r.Link.RTT = max(opts.SrcRTT, opts.DstRTT)
	r.Link.Retransmits = -1
	r.MaxBuffer = opts.MaxBuffer
	file, size, err := pickFile(ctx, src, opts.SrcPath)
	if err != nil {
		r.Note = fmt.Sprintf("no third-party burst: %v", err)
		return r, nil
	}
	target := path.Join(opts.DstDir, fmt.Sprintf(".ferry-probe-%d", r.Time.UnixNano()))
	if opts.DstDir == "" {
		target = strings.TrimPrefix(target, "/")
	}
	run := func(n int64) (Burst, error) {
		b := Burst{Direction: "third-party", Path: file + " → " + target, Streams: o.Streams}
		var s sampler
		ctx, cancel := context.WithTimeout(ctx, 2*o.Duration+5*time.Second)
		defer cancel()
		t := time.Now()
		got, err := client.ThirdParty(ctx, src, file, dst, target, &client.ThirdPartyOptions{
			Length: n, Size: size, KnownSize: true, Parallel: o.Streams, ModeE: true,
			Progress: s.add, ProgressInterval: 50 * time.Millisecond,
		})
		s.fill(&b, got, time.Since(t))
		b.Retransmits = -1
		return b, err
	}
	n := min(size, o.MaxBytes, warmBytes)
	b, err := run(n)
	if err == nil && n < size && n < o.MaxBytes {
		var b2 Burst
		if b2, err = run(min(size, burstSize(b.Rate, o))); b2.Bytes > 0 {
			b = b2
		}
	}
	if derr := dst.Delete(ctx, target); derr != nil && err == nil {
		var re *client.ReplyError
		if !errors.As(derr, &re) {
			err = derr
		}
	}
	notes := []string{"RTT: the longer control RTT from here (the servers' own is not seen)"}
	if b.Bytes > 0 {
		r.Bursts = append(r.Bursts, b)
		r.Link.Bandwidth = 8 * b.Rate
		notes = append(notes, b.String())
	}
	if err != nil {
		notes = append(notes, fmt.Sprintf("third-party burst: %v", err))
		r.Note = strings.Join(notes, "; ")
		if broken(ctx, src, err) || broken(ctx, dst, err) {
			return r, fmt.Errorf("probe: third party: %w", err)
		}
		return r, nil
	}
	r.Note = strings.Join(notes, "; ")
	return r, nil
}
