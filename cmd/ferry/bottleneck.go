package main

// -nlb / -nl-bottleneck: which leg of a copy limited it (source read,
// network, destination write), from what the sending end's kernel
// accounted on its data connections. globus-url-copy asks the servers'
// NetLogger XIO driver; Ferry reads TCP_INFO's chrono statistics
// instead: while a connection has nothing to send, the sender's
// application (its source read) is the limit; while it waits for the
// receiver's window, the receiver (its destination write) is; the rest of
// the busy time, the network (congestion window, or the send buffer).
// On an upload the client is the sender and reads its own sockets; on a
// download or a third-party copy the sending server reports its side with
// SITE XFERSTATS, which only Ferry's server answers.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/transfer"
)

// nlbMinSpan is the shortest transfer the report judges: the kernel
// counts the chrono statistics in jiffies (up to 10 ms each), and set-up
// round trips weigh on a shorter one.
const nlbMinSpan = 200 * time.Millisecond

// senderView is the sending end's accounting of a transfer's data
// connections, summed over them.
type senderView struct {
	who                string        // who measured: "the client's", "the source server's"
	bytes              int64         // moved
	span               time.Duration // the transfer's time
	conns              int           // data connections measured
	busy, rwnd, sndbuf time.Duration // netopt.TCPStats chrono sums
}

// nlbReport is the outcome of a -nlb copy.
type nlbReport struct {
	view *senderView // nil when no sender reported
	why  string      // with view nil: why the legs are undetermined
}

// Shares of the connections' time each leg was the limit.
func (v *senderView) shares() (src, network, dst float64) {
	total := float64(v.span) * float64(v.conns)
	busy := min(float64(v.busy), total)
	rwnd := min(float64(v.rwnd), busy)
	return (total - busy) / total, (busy - rwnd) / total, rwnd / total
}

// verdict names the limiting leg, or says why there is none.
func (r nlbReport) verdict() string {
	switch v := r.view; {
	case v == nil:
		return "undetermined (" + r.why + ")"
	case v.conns == 0:
		return "undetermined (no data connection could be measured)"
	case v.span < nlbMinSpan:
		return fmt.Sprintf("undetermined (the transfer took %v, too short to judge)", v.span.Round(time.Millisecond))
	}
	src, network, dst := r.view.shares()
	switch {
	case src >= network && src >= dst:
		return "source read"
	case dst >= network:
		return "destination write"
	}
	return "network"
}

// write prints the report to w.
func (r nlbReport) write(w io.Writer) {
	if v := r.view; v != nil && v.conns > 0 && v.span > 0 {
		fmt.Fprintf(w, "Bottleneck report: %s TCP accounting of %d data connection(s), %s in %v (%s/s)\n",
			v.who, v.conns, humanBytes(float64(v.bytes)), v.span.Round(time.Millisecond), humanBytes(float64(v.bytes)/v.span.Seconds()))
		src, network, dst := v.shares()
		perConn := func(d time.Duration) string {
			d /= time.Duration(v.conns)
			if d <= 0 {
				return "-"
			}
			return humanBytes(float64(v.bytes)/d.Seconds()) + "/s"
		}
		fmt.Fprintf(w, "  source read:       limiting %3.0f%% of the time (the sender had no data to send)\n", 100*src)
		fmt.Fprintf(w, "  network:           limiting %3.0f%% of the time (data in flight: %s while busy; send buffer full %v)\n",
			100*network, perConn(v.busy), (v.sndbuf / time.Duration(v.conns)).Round(time.Millisecond))
		fmt.Fprintf(w, "  destination write: limiting %3.0f%% of the time (the receiver's window was closed)\n", 100*dst)
	}
	fmt.Fprintf(w, "Bottleneck: %s\n", r.verdict())
}

// nlbProbe gathers a -nlb copy's measurements: it wraps the engine's
// dialer to know the control connections and asks each for SITE
// XFERSTATS as the copy ends.
type nlbProbe struct {
	mu    sync.Mutex
	conns map[*client.Conn]transfer.Location // guarded by mu
	stats map[string]*senderView             // guarded by mu; by Location.Addr, those that answered
	last  client.Progress                    // guarded by mu; the last progress of the copy
	start time.Time                          // guarded by mu; EventStart
}

// attach makes eng report to p.
func (p *nlbProbe) attach(eng *transfer.Engine) {
	p.conns, p.stats = map[*client.Conn]transfer.Location{}, map[string]*senderView{}
	dial := eng.Dial
	eng.Dial = func(ctx context.Context, l transfer.Location) (*client.Conn, error) {
		c, err := dial(ctx, l)
		if err == nil {
			p.mu.Lock()
			p.conns[c] = l
			p.mu.Unlock()
		}
		return c, err
	}
	eng.AfterCopy = p.ask
}

// event takes the copy's events (its progress: the client's sockets).
func (p *nlbProbe) event(ev transfer.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Kind {
	case transfer.EventStart:
		p.start = time.Now()
	case transfer.EventProgress:
		p.last = ev.Progress
	}
}

// ask sends SITE XFERSTATS on every control connection still up.
func (p *nlbProbe) ask(ctx context.Context) {
	p.mu.Lock()
	conns := make(map[*client.Conn]transfer.Location, len(p.conns))
	for c, l := range p.conns {
		conns[c] = l
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for c, l := range conns {
		r, err := c.Do(ctx, "SITE XFERSTATS")
		if err != nil || r.Code != 200 || len(r.Lines) == 0 {
			continue
		}
		if v, ok := parseXferStats(r.Lines[0]); ok {
			p.mu.Lock()
			if old := p.stats[l.Addr]; old == nil || v.busy > old.busy {
				p.stats[l.Addr] = v
			}
			p.mu.Unlock()
		}
	}
}

// parseXferStats reads SITE XFERSTATS' facts (times in microseconds).
func parseXferStats(line string) (*senderView, bool) {
	v := new(senderView)
	seen := 0
	for f := range strings.SplitSeq(line, ";") {
		k, val, found := strings.Cut(strings.TrimSpace(f), "=")
		if !found {
			continue
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 {
			return nil, false
		}
		us := time.Duration(n) * time.Microsecond
		switch k {
		case "Bytes":
			v.bytes = n
		case "Elapsed":
			v.span = us
		case "Measured":
			v.conns = int(n)
		case "Busy":
			v.busy = us
		case "RwndLimited":
			v.rwnd = us
		case "SndbufLimited":
			v.sndbuf = us
		default:
			continue
		}
		seen++
	}
	return v, seen == 6
}

// report judges the copy of src to dst that moved n bytes by end.
func (p *nlbProbe) report(src, dst location, n int64, end time.Time) nlbReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	if src.kind != locRemote && dst.kind == locRemote {
		// An upload: the client sent.
		v := &senderView{who: "the client's", bytes: n, span: end.Sub(p.start)}
		for _, c := range p.last.Conns {
			v.conns++
			v.busy += c.Busy
			v.rwnd += c.RwndLimited
			v.sndbuf += c.SndbufLimited
		}
		if v.conns == 0 {
			return nlbReport{why: "this system does not report TCP_INFO of the data connections"}
		}
		return nlbReport{view: v}
	}
	if src.kind != locRemote {
		return nlbReport{why: "a local copy has no data connections"}
	}
	v := p.stats[src.addr]
	if v == nil || v.conns == 0 {
		why := "the source server does not report its side (SITE XFERSTATS, a Ferry server's)"
		if dst.kind != locRemote {
			why += "; the client received, and a receiver's TCP accounting cannot split the legs"
		}
		return nlbReport{why: why}
	}
	v.who = "the source server's"
	return nlbReport{view: v}
}
