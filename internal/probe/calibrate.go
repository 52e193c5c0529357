package probe

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
)

// Cell is one point of a calibration grid.
type Cell struct {
	Parallel  int // data connections
	TCPBuffer int // bytes; 0: the kernel's automatic tuning
}

// Grid returns the default calibration grid: -p 1, 4, 8 and 16, each
// with a 1 MiB buffer and with the largest this kernel grants (the
// smaller of net.core.rmem_max and wmem_max, at most 16 MiB), or
// autotuning when that is unknown or no larger.
func Grid(k advisor.Kernel) []Cell {
	big := min(nonzero(k.RmemMax), nonzero(k.WmemMax))
	if big == maxInt || big <= 1<<20 {
		big = 0
	}
	big = min(big, 16<<20)
	var g []Cell
	for _, p := range []int{1, 4, 8, 16} {
		g = append(g, Cell{p, 1 << 20}, Cell{p, big})
	}
	return g
}

// CalibrateOptions tune Calibrate.
type CalibrateOptions struct {
	// Src and Dst are the ends the records name (the server and the
	// local side, in the transfer's direction).
	Src, Dst history.Endpoint
	// Path is the file to read, or with Upload the file to write (and
	// delete afterwards).
	Path   string
	Upload bool
	// Grid is the cells to run; nil means Grid(KernelLimits()).
	Grid []Cell
	// PerCell is about how long each cell's timed transfer lasts, after
	// a warm-up of at most 4 MiB; 0 means 400 ms.
	PerCell time.Duration
	// MaxBytes bounds each cell's transfer; 0 means DefaultMaxBytes.
	MaxBytes int64
	// RTT is the control channel's RTT, recorded where TCP_INFO has none.
	RTT time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Calibrate runs one short transfer per grid cell over c and returns a
// history.Record for each (Tool "calibrate", Params.Auto false, Tuning
// naming the grid), failed cells included with Outcome Failed. Size and
// Bytes are the bytes the timed transfer moved, and Duration is what
// they took while data moved (the setup's round trips left out, so that
// Rate is the data rate). The error is for a broken control connection;
// the records made before it are returned with it.
func Calibrate(ctx context.Context, c *client.Conn, opts CalibrateOptions) ([]history.Record, error) {
	grid := opts.Grid
	if grid == nil {
		grid = Grid(KernelLimits())
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	o := Options{Duration: cmp.Or(opts.PerCell, 400*time.Millisecond), MaxBytes: cmp.Or(opts.MaxBytes, DefaultMaxBytes)}
	dir, size := "download", int64(0)
	if opts.Upload {
		dir, size = "upload", o.MaxBytes
	} else {
		n, err := c.Size(ctx, opts.Path)
		if err != nil {
			return nil, fmt.Errorf("probe: calibrate: %w", err)
		}
		if n <= 0 {
			return nil, fmt.Errorf("probe: calibrate: %s is empty", opts.Path)
		}
		size = n
	}
	var recs []history.Record
	for i, cell := range grid {
		start := now().UTC()
		b, err := timed(ctx, c, dir, opts.Path, size, max(cell.Parallel, 1), cell.TCPBuffer, o)
		r := history.Record{
			Start: start, End: now().UTC(), Kind: dir, Tool: "calibrate",
			Src: opts.Src, Dst: opts.Dst, Size: b.Bytes, Bytes: b.Bytes, Outcome: history.OK,
			Params: history.Params{Mode: "E", Parallel: max(cell.Parallel, 1), TCPBuffer: cell.TCPBuffer},
			Link:   history.Link{RTT: cmp.Or(b.TCPRTT, opts.RTT), Retransmits: b.Retransmits},
			Tuning: fmt.Sprintf("calibrate: cell %d of %d", i+1, len(grid)),
		}
		if dir == "download" {
			r.SrcPath = opts.Path
		} else {
			r.DstPath = opts.Path
		}
		if b.Rate > 0 {
			r.Duration = time.Duration(float64(b.Bytes) / b.Rate * float64(time.Second))
		}
		if b.Retransmits > 0 && b.SegsOut > 0 {
			r.Link.LossRate = float64(b.Retransmits) / float64(b.SegsOut)
		}
		if err != nil {
			r.Outcome, r.Error = history.Failed, err.Error()
		}
		recs = append(recs, r)
		if err != nil && broken(ctx, c, err) {
			return recs, fmt.Errorf("probe: calibrate: %w", err)
		}
	}
	if opts.Upload {
		_ = c.Delete(ctx, opts.Path) // best effort: the cells wrote it
	}
	return recs, nil
}
