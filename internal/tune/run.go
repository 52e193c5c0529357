package tune

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MoveFunc moves the n bytes of the file at offset off with setting s and
// reports what the part measured. It must move exactly n bytes or fail.
type MoveFunc func(ctx context.Context, off, n int64, s Setting) (Sample, error)

// Step is one part of a tuned transfer: its range, the setting it ran
// with, what it measured and why the next setting was chosen.
type Step struct {
	Offset, Length int64
	Setting        Setting
	Elapsed        time.Duration
	Rate           float64 // bytes per second
	Loss           float64
	RTT            time.Duration
	Next           string
}

// Result is what Run did.
type Result struct {
	// Done is the end of the last part that finished: every byte of
	// [start, Done) was moved exactly once.
	Done  int64
	Steps []Step
}

// Main is the setting that moved the most bytes (the one a record of
// the transfer should name: a start of 32 streams that moved to 4 for
// most of the file ran at 4); the zero Setting when no part ran.
func (r Result) Main() Setting {
	by := map[Setting]int64{}
	var main Setting
	for _, st := range r.Steps {
		by[st.Setting] += st.Length
		if by[st.Setting] > by[main] {
			main = st.Setting
		}
	}
	return main
}

// MaxParts bounds the parts of one transfer; past it the rest goes in one
// part with the best setting.
const MaxParts = 1000

// ErrShortPart reports a part that moved fewer bytes than asked without
// an error: the file changed while it was copied.
var ErrShortPart = errors.New("tune: a part moved fewer bytes than asked (the file changed?)")

// Run moves the bytes [start, end) part by part, each part's setting
// chosen by c from the ones before it. The parts tile the range exactly;
// on an error Result.Done says how far the range is complete.
func Run(ctx context.Context, start, end int64, c *Controller, move MoveFunc) (Result, error) {
	res := Result{Done: start}
	for res.Done < end {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		n := c.PartSize(end - res.Done)
		if len(res.Steps) == MaxParts-1 {
			n = end - res.Done
		}
		set := c.Setting()
		s, err := move(ctx, res.Done, n, set)
		if err == nil && s.Bytes != n {
			err = fmt.Errorf("%w: %d of %d bytes at offset %d", ErrShortPart, s.Bytes, n, res.Done)
		}
		if err != nil {
			return res, err
		}
		_, why := c.Next(s)
		res.Steps = append(res.Steps, Step{Offset: res.Done, Length: n, Setting: set, Elapsed: s.Elapsed,
			Rate: s.Rate(), Loss: s.Loss(), RTT: s.RTT, Next: why})
		res.Done += n
	}
	return res, nil
}
