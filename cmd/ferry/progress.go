package main

// Live progress of ferry cp -vb: total bytes, average and instantaneous
// rates, and the bytes and rate of each data connection, in both
// directions, at least once a second.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/ferrygrid/ferry/client"
)

// progressPrinter prints client.Progress snapshots to w. On a terminal
// each report overwrites the last (carriage return, like
// globus-url-copy); otherwise each is a line. It is safe for concurrent
// use.
type progressPrinter struct {
	w   io.Writer
	tty bool
	now func() time.Time

	mu          sync.Mutex
	start       time.Time // guarded by mu
	lastT       time.Time // guarded by mu
	lastBytes   int64     // guarded by mu
	lastStreams []int64   // guarded by mu
	lastAttempt int       // guarded by mu
	printed     bool      // guarded by mu
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	now := time.Now()
	return &progressPrinter{w: w, tty: tty, now: time.Now, start: now, lastT: now}
}

// mib is the unit of the rates, as globus-url-copy prints them.
const mib = 1 << 20

// update prints one report.
func (p *progressPrinter) update(pr client.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	var b strings.Builder
	fmt.Fprintf(&b, "%13d bytes %12.2f MB/sec avg %12.2f MB/sec inst", pr.Bytes, avg, inst)
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
	text := b.String()
	if p.tty {
		// Move back over the previous report's stream lines.
		if p.printed && len(p.lastStreams) > 0 {
			fmt.Fprintf(p.w, "\x1b[%dA", len(p.lastStreams))
		}
		text = "\r\x1b[J" + text
	} else {
		text += "\n"
	}
	fmt.Fprint(p.w, text)
	p.printed = true
	p.lastT, p.lastBytes = now, pr.Bytes
	p.lastStreams = append(p.lastStreams[:0], pr.Streams...)
}

// done ends the live display.
func (p *progressPrinter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.printed {
		fmt.Fprintln(p.w)
	}
}
