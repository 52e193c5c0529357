package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/advisor"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/probe"
	"github.com/ferrygrid/ferry/internal/progress"
)

func init() {
	register(&command{
		name:    "probe",
		summary: "measure the link to a server: RTT, bandwidth, loss, TCP buffers, features",
		usage:   "[flags] URL [URL2]",
		help:    probeHelp,
		run:     runProbe,
	})
}

const probeHelp = `
A probe takes a few seconds per server. It times NOOPs on the control
channel (the RTT is their median), reads the server's FEAT, reads a
bounded part of the URL's file with MODE E and -p streams (ERET; a
directory URL reads its largest file) to measure the throughput, offers
SBUF with falling sizes to find the largest buffer the server accepts,
and reads this host's limits (net.core.rmem_max and wmem_max,
net.ipv4.tcp_rmem and tcp_wmem). Loss needs this end to send: -upload
PATH also writes a burst of zeros to PATH on the server (then deletes
it) and counts the retransmitted segments.

With URL2 both servers are probed from here, one after the other, and
then the link between them with a third-party burst: URL's file (or a
directory's largest) is read into a .ferry-probe-* file in URL2's
directory, deleted afterwards. Its RTT is the longer control RTT from
here (the servers' own round trip cannot be seen from here), its loss
unknown (the data connections are the servers').

Each probe is stored in the history (see ferry history probes) unless
-history off.
`

func runProbe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["probe"], e)
	dsn := fs.String("history", "", historyDSNUsage)
	asJSON := fs.Bool("json", false, "print one JSON array, an object per server")
	par := fs.Int("p", probe.DefaultStreams, "parallel data connections `N` of the burst")
	var maxBytes sizeFlag = probe.DefaultMaxBytes
	fs.Var(&maxBytes, "max", "read at most `SIZE` bytes per burst")
	dur := fs.Duration("t", probe.DefaultDuration, "about how long each burst lasts (`DURATION`)")
	upload := fs.String("upload", "", "also upload a burst of zeros to `PATH` on the server (deleted afterwards) to measure loss")
	active := fs.Bool("active", false, "active data connections: the client listens (EPRT/PORT)")
	var g gsiFlags
	g.register(fs, true)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := g.check(); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usagef("want one or two URLs")
	}
	if *par < 1 || *par > 64 {
		return usagef("-p must be 1 to 64")
	}
	if *dur <= 0 || *dur > time.Minute {
		return usagef("-t must be above 0 and at most 1m")
	}
	locs, err := remoteArg(fs.Args(), fs.NArg())
	if err != nil {
		return err
	}
	log := warnLogger(e)
	st := hist.OpenOrOff(ctx, hist.DSN(*dsn), log)
	defer st.Close()
	k := probe.KernelLimits()
	var out []probeReport
	emit := func(o probeReport) {
		if *asJSON {
			out = append(out, o)
		} else {
			o.print(e.stdout)
		}
	}
	var conns []*client.Conn
	var results []*probe.Result
	for _, loc := range locs {
		start := time.Now()
		c, err := connect(ctx, loc, clientOptions{active: *active, gsi: &g})
		if err != nil {
			return err
		}
		defer hangUp(ctx, c)
		r, err := probe.Run(ctx, c, probe.Options{
			Endpoint: loc.export().HistoryEndpoint(), Path: loc.path, Streams: *par,
			MaxBytes: int64(maxBytes), Duration: *dur, UploadPath: *upload, Kernel: &k,
		})
		if err != nil {
			return &opError{What: "probe of " + loc.String(), Err: err}
		}
		if r.ID, err = st.AddProbe(ctx, &r.Probe); err != nil {
			log.Warn("history: probe not stored", "err", err)
		}
		emit(newProbeReport(loc.String(), r, time.Since(start)))
		conns = append(conns, c)
		results = append(results, r)
	}
	if len(locs) == 2 {
		// The link between the two servers: a third-party burst.
		start := time.Now()
		r, err := probe.RunPair(ctx, conns[0], conns[1], probe.PairOptions{
			Src: locs[0].export().HistoryEndpoint(), Dst: locs[1].export().HistoryEndpoint(), SrcPath: locs[0].path,
			DstDir: burstDir(ctx, conns[1], locs[1].path), Streams: *par, MaxBytes: int64(maxBytes), Duration: *dur,
			SrcRTT: results[0].Link.RTT, DstRTT: results[1].Link.RTT,
			MaxBuffer: advisor.MinKnown(results[0].ServerBuf, results[1].ServerBuf),
		})
		if err != nil {
			return &opError{What: "third-party probe " + locs[0].String() + " → " + locs[1].String(), Err: err}
		}
		if r.ID, err = st.AddProbe(ctx, &r.Probe); err != nil {
			log.Warn("history: probe not stored", "err", err)
		}
		o := newProbeReport(locs[0].String()+" → "+locs[1].String(), r, time.Since(start))
		o.Kind = "pair"
		emit(o)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return nil
}

// burstDir is where a third-party burst may write on the destination:
// p if it is a directory, else its parent.
func burstDir(ctx context.Context, c *client.Conn, p string) string {
	if strings.HasSuffix(p, "/") {
		return p
	}
	if en, err := c.Stat(ctx, p); err == nil && isDirType(en.Type) {
		return p
	}
	return parentDir(p)
}

// probeReport is the JSON form of a probe; its field names are stable.
type probeReport struct {
	URL          string        `json:"url"`
	Kind         string        `json:"kind"`         // "server", or "pair": the third-party burst between URL and URL2
	ID           int64         `json:"id,omitempty"` // 0: not stored
	Time         time.Time     `json:"time"`
	RTT          float64       `json:"rtt_s"`
	RTTs         []float64     `json:"noop_rtts_s"`
	Bandwidth    float64       `json:"bandwidth_bps"`
	Retransmits  int64         `json:"retransmits"` // -1 unknown
	LossRate     float64       `json:"loss_rate"`
	MaxBuffer    int           `json:"max_buffer"`
	ServerBuffer int           `json:"server_sbuf"`
	Kernel       kernelOut     `json:"kernel"`
	Features     []string      `json:"features"`
	Bursts       []burstReport `json:"bursts"`
	Note         string        `json:"note"`
	Took         float64       `json:"took_s"`
}

type burstReport struct {
	Direction   string  `json:"direction"`
	Path        string  `json:"path"`
	Streams     int     `json:"streams"`
	Bytes       int64   `json:"bytes"`
	Elapsed     float64 `json:"elapsed_s"`
	Rate        float64 `json:"rate"` // bytes per second while data moved
	Retransmits int64   `json:"retransmits"`
	SegsOut     int64   `json:"segs_out"`
	TCPRTT      float64 `json:"tcp_rtt_s"`
	Buffer      int     `json:"socket_buffer"`
}

type kernelOut struct {
	RmemMax int    `json:"rmem_max"`
	WmemMax int    `json:"wmem_max"`
	TCPRmem [3]int `json:"tcp_rmem"`
	TCPWmem [3]int `json:"tcp_wmem"`
}

func newProbeReport(url string, r *probe.Result, took time.Duration) probeReport {
	o := probeReport{
		URL: url, Kind: "server", ID: r.ID, Time: r.Time, RTT: r.Link.RTT.Seconds(), Bandwidth: r.Link.Bandwidth,
		Retransmits: r.Link.Retransmits, LossRate: r.Link.LossRate, MaxBuffer: r.MaxBuffer,
		ServerBuffer: r.ServerBuf, Kernel: kernelOut(r.Kernel), Features: r.Features,
		Note: r.Note, Took: took.Seconds(),
	}
	for _, b := range r.Bursts {
		o.Bursts = append(o.Bursts, burstReport{b.Direction, b.Path, b.Streams, b.Bytes, b.Elapsed.Seconds(),
			b.Rate, b.Retransmits, b.SegsOut, b.TCPRTT.Seconds(), b.RcvBuf})
	}
	for _, d := range r.RTTs {
		o.RTTs = append(o.RTTs, d.Seconds())
	}
	return o
}

func (o probeReport) print(w io.Writer) {
	stored := "not stored"
	if o.ID > 0 {
		stored = fmt.Sprintf("stored as probe #%d", o.ID)
	}
	fmt.Fprintf(w, "probe of %s (%s)\n", o.URL, stored)
	rtt := "unknown"
	switch {
	case o.RTT > 0 && len(o.RTTs) == 0:
		rtt = secs(o.RTT) + " (the longer control RTT from here; the servers' own is not seen)"
	case o.RTT > 0:
		lo, hi := o.RTTs[0], o.RTTs[0]
		for _, r := range o.RTTs {
			lo, hi = min(lo, r), max(hi, r)
		}
		rtt = fmt.Sprintf("%s (median of %d NOOPs, %s–%s)", secs(o.RTT), len(o.RTTs), secs(lo), secs(hi))
	}
	fmt.Fprintf(w, "  control RTT   %s\n", rtt)
	bw := progress.Bits(o.Bandwidth)
	for _, b := range o.Bursts {
		if 8*b.Rate == o.Bandwidth {
			bw += fmt.Sprintf(" (%s %s of %s, -p %d, in %s)", b.Direction, progress.Bytes(float64(b.Bytes)), b.Path, b.Streams, secs(b.Elapsed))
			break
		}
	}
	fmt.Fprintf(w, "  throughput    %s\n", bw)
	if o.Retransmits >= 0 {
		fmt.Fprintf(w, "  loss          %d segments retransmitted (%.3g%%)\n", o.Retransmits, 100*o.LossRate)
	} else {
		why := "this end only received; -upload PATH measures it"
		if o.Kind == "pair" {
			why = "the data connections are the servers'"
		}
		fmt.Fprintf(w, "  loss          unknown (%s)\n", why)
	}
	if o.Kind == "pair" {
		if o.MaxBuffer > 0 {
			fmt.Fprintf(w, "  max buffer    %s (both servers accept)\n", progress.Bytes(float64(o.MaxBuffer)))
		}
		fmt.Fprintf(w, "  notes         %s\n", o.Note)
		fmt.Fprintf(w, "  took          %s\n", time.Duration(o.Took*float64(time.Second)).Round(time.Millisecond))
		return
	}
	sbuf := "refuses SBUF"
	if o.ServerBuffer > 0 {
		sbuf = "accepts SBUF " + progress.Bytes(float64(o.ServerBuffer))
	}
	fmt.Fprintf(w, "  TCP buffers   server %s; this kernel: rmem_max %s, wmem_max %s, tcp_rmem max %s, tcp_wmem max %s\n",
		sbuf, sysctlBytes(o.Kernel.RmemMax), sysctlBytes(o.Kernel.WmemMax), sysctlBytes(o.Kernel.TCPRmem[2]), sysctlBytes(o.Kernel.TCPWmem[2]))
	if o.MaxBuffer > 0 {
		fmt.Fprintf(w, "  max buffer    %s (both ends)\n", progress.Bytes(float64(o.MaxBuffer)))
	}
	fmt.Fprintf(w, "  features      %s\n", strings.Join(o.Features, ", "))
	fmt.Fprintf(w, "  notes         %s\n", o.Note)
	fmt.Fprintf(w, "  took          %s\n", time.Duration(o.Took*float64(time.Second)).Round(time.Millisecond))
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}

func sysctlBytes(n int) string {
	if n <= 0 {
		return "unknown"
	}
	return progress.Bytes(float64(n))
}
