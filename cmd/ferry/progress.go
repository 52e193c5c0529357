package main

// Live progress of transfers. On a terminal, internal/progress redraws a
// block of lines (overall, files, and with -vb each data connection, in
// both directions); off a terminal ferry cp -vb prints a report a second:
// total bytes, average and instantaneous rates, and the bytes and rate of
// each data connection.

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/progress"
)

// terminal reports whether w is a terminal, and a function giving its
// width.
func terminal(w io.Writer) (bool, func() int) {
	f, ok := w.(*os.File)
	if !ok {
		return false, nil
	}
	fd := fileFd(f)
	if !term.IsTerminal(fd) {
		return false, nil
	}
	return true, func() int {
		w, _, err := term.GetSize(fd)
		if err != nil {
			return 80
		}
		return w
	}
}

// newProgressDisplay returns a display of the transfers reported to it:
// live on w when w is a terminal (with a line per data connection when
// streams is set), else quiet but for a summary line when summary is set.
// Its FileStarted, FileProgress and FileDone methods take the file's name
// as the key. The caller Starts and Closes it.
func newProgressDisplay(w io.Writer, streams, summary bool) *progress.Display {
	tty, width := terminal(w)
	return progress.New(progress.Options{Out: w, Live: tty, Width: width, Streams: streams, Summary: summary && !tty})
}

// displayProgress returns a client progress callback (RetrieveOptions,
// StoreOptions .Progress) that feeds the counters of the file name,
// overall and per data connection, to d.
func displayProgress(d *progress.Display, name string) func(client.Progress) {
	return func(p client.Progress) {
		d.FileProgress(name, p.Bytes)
		d.FileStreams(name, slices.Clone(p.Streams))
	}
}

// progressPrinter shows the client.Progress snapshots of one transfer on
// w. On a terminal a live display is redrawn in place; otherwise each
// snapshot is printed as a report of a line per data connection. It is
// safe for concurrent use.
type progressPrinter struct {
	w       io.Writer
	now     func() time.Time
	live    *progress.Display // on a terminal
	name    string            // the file's key in live; guarded by mu
	size    int64             // its size, -1 if unknown; guarded by mu
	started bool              // live knows the file; guarded by mu

	mu          sync.Mutex
	start       time.Time     // guarded by mu
	lastT       time.Time     // guarded by mu
	lastBytes   int64         // guarded by mu
	lastStreams []int64       // guarded by mu
	lastAttempt int           // guarded by mu
	eta         time.Duration // the live ETA of the last report, 0 unknown; guarded by mu

	guc     bool // globus-url-copy's reports: one line each, ended by "\r" (guc.go)
	printed bool // a guc report was printed; guarded by mu
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	return newProgressPrinterStreams(w, true)
}

// newProgressPrinterStreams is newProgressPrinter with the live display's
// line per data connection on or off (ferry cp shows them with -vb).
func newProgressPrinterStreams(w io.Writer, streams bool) *progressPrinter {
	now := time.Now()
	p := &progressPrinter{w: w, now: time.Now, start: now, lastT: now, size: -1}
	if tty, width := terminal(w); tty {
		p.live = progress.New(progress.Options{Out: w, Live: true, Width: width, Streams: streams})
		p.live.Start()
	}
	return p
}

// begin names the file being transferred and gives its size (-1:
// unknown) for the live display's percentage. Calling it before the
// transfer is optional.
func (p *progressPrinter) begin(name string, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		p.name, p.size = name, size
		if p.live != nil && size > 0 {
			// The head line's percentage and ETA (from the live rate).
			p.live.AddTotal(0, size)
		}
	}
}

// updateETA prints one report with the live ETA (0: unknown), which the
// report off a terminal shows after the rates.
func (p *progressPrinter) updateETA(pr client.Progress, eta time.Duration) {
	p.mu.Lock()
	p.eta = eta
	p.mu.Unlock()
	p.update(pr)
}

// mib is the unit of the rates, as globus-url-copy prints them.
const mib = 1 << 20

// update prints one report.
func (p *progressPrinter) update(pr client.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil {
		if !p.started {
			p.live.FileStarted(p.name, p.size)
			p.started = true
		}
		p.live.FileProgress(p.name, pr.Bytes)
		p.live.FileStreams(p.name, slices.Clone(pr.Streams))
		return
	}
	now := p.now()
	dt := now.Sub(p.lastT).Seconds()
	if dt <= 0 {
		dt = 1e-9
	}
	avg := float64(pr.Bytes) / max(now.Sub(p.start).Seconds(), 1e-9) / mib
	inst := float64(pr.Bytes-p.lastBytes) / dt / mib
	if pr.Attempt != p.lastAttempt {
		p.lastStreams, p.lastAttempt = nil, pr.Attempt
	}
	if p.guc {
		fmt.Fprintf(p.w, "%13d bytes %12.2f MB/sec avg %12.2f MB/sec inst\r", pr.Bytes, avg, inst)
		p.lastT, p.lastBytes, p.printed = now, pr.Bytes, true
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%13d bytes %12.2f MB/sec avg %12.2f MB/sec inst", pr.Bytes, avg, inst)
	if p.eta > 0 {
		fmt.Fprintf(&b, "  ETA %s", progress.Duration(p.eta))
	}
	if pr.Attempt > 0 {
		fmt.Fprintf(&b, "  (attempt %d)", pr.Attempt+1)
	}
	for i, n := range pr.Streams {
		var prev int64
		if i < len(p.lastStreams) {
			prev = p.lastStreams[i]
		}
		fmt.Fprintf(&b, "\n  stream %2d: %13d bytes %12.2f MB/sec", i, n, float64(n-prev)/dt/mib)
	}
	fmt.Fprintln(p.w, b.String())
	p.lastT, p.lastBytes = now, pr.Bytes
	p.lastStreams = append(p.lastStreams[:0], pr.Streams...)
}

// done ends the live display.
func (p *progressPrinter) done() {
	if p.live != nil {
		p.live.Close()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.printed {
		fmt.Fprintln(p.w) // after globus-url-copy's last "\r"
	}
}
