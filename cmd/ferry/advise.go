package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/null"
	"github.com/ferrygrid/ferry/internal/advisor"
	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/probe"
	"github.com/ferrygrid/ferry/internal/progress"
	"github.com/ferrygrid/ferry/transfer"
)

func init() {
	register(&command{
		name:    "advise",
		summary: "suggest transfer parameters, a rate and an ETA for a copy, from history or a probe",
		usage:   "[flags] SRC DST",
		help:    adviseHelp,
		run:     runAdvise,
	})
}

const adviseHelp = `
The advisor types the connection from SRC to DST, then picks the best
parameters of the past transfers of that type (the rate of each set,
weighted by how close its files' sizes are to -size):
  host-pair     past transfers between the same two hosts
  domain-pair   past transfers between the same two sites (domains)
  similar-link  past transfers over the link nearest to this one by
                RTT, bandwidth and loss (from a probe of this link)
  model         the probe alone: bandwidth-delay product with this
                kernel's buffer overhead, the Mathis bound for loss,
                the largest buffer both ends accept
  default       nothing known: MODE E, -p 4, autotuned buffers
It says which records or probe it used, and which sysctl caps the TCP
buffer when the link needs more than this kernel grants.

-probe probes the remote ends first (see ferry probe). -calibrate runs a
short grid of transfers (-p 1, 4, 8, 16 × two buffer sizes, a few
seconds in all) between this host and the remote end, records them in
the history as tool "calibrate", then advises: a download reads SRC, an
upload writes zeros to DST's name + ".ferry-calibrate" and deletes it.
Third-party copies cannot be calibrated from here.

The size of a remote SRC is read with SIZE when -size is not given.
`

// adviseConfig is ferry advise's command line.
type adviseConfig struct {
	dsn                        string
	size                       int64
	files, stripes             int
	asJSON, calibrate, doProbe bool
	active                     bool
	g                          gsiFlags
	srcArg, dstArg             string
	src, dst                   location
}

// parseAdviseFlags parses and checks ferry advise's arguments.
func parseAdviseFlags(e *env, args []string) (*adviseConfig, error) {
	c := &adviseConfig{}
	fs := newFlagSet(commands["advise"], e)
	fs.StringVar(&c.dsn, "history", "", historyDSNUsage)
	sizeArg := fs.String("size", "", "the size of each file, `SIZE` bytes or with K, M, G, T (default: SRC's size)")
	fs.IntVar(&c.files, "n", 1, "the number of files `N` of that size")
	fs.BoolVar(&c.asJSON, "json", false, "print one JSON object")
	fs.BoolVar(&c.calibrate, "calibrate", false, "first run a short grid of test transfers and record them")
	fs.IntVar(&c.stripes, "stripes", 0, "the servers stripe over `N` data movers (ferry cp -stripe)")
	fs.BoolVar(&c.doProbe, "probe", false, "first probe the remote ends (and record the probes)")
	fs.BoolVar(&c.active, "active", false, "active data connections: the client listens (EPRT/PORT)")
	c.g.register(fs, true)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := c.g.check(); err != nil {
		return nil, err
	}
	if fs.NArg() != 2 {
		return nil, usagef("want SRC and DST")
	}
	if c.stripes < 0 {
		return nil, usagef("-stripes must not be negative")
	}
	if c.files < 1 {
		return nil, usagef("-n must be at least 1")
	}
	if *sizeArg != "" {
		n, ok := null.ParseSize(*sizeArg)
		if !ok {
			return nil, usagef("bad -size %q: want bytes, or a number with K, M, G or T", *sizeArg)
		}
		c.size = n
	}
	var locs [2]location
	for i, a := range fs.Args() {
		l, err := parseLocation(a)
		if err != nil {
			return nil, usagef("%v", err)
		}
		if l.kind == locStdio {
			return nil, usagef("advise needs URLs or paths, not -")
		}
		locs[i] = l
	}
	c.srcArg, c.dstArg = fs.Arg(0), fs.Arg(1)
	c.src, c.dst = locs[0], locs[1]
	if c.src.kind != locRemote && c.dst.kind != locRemote {
		return nil, usagef("neither %s nor %s is a server: nothing to advise", c.src, c.dst)
	}
	if c.calibrate && c.src.kind == locRemote && c.dst.kind == locRemote {
		return nil, usagef("-calibrate needs one local end: run it for each server (ferry advise -calibrate URL /dev/null)")
	}
	return c, nil
}

func runAdvise(ctx context.Context, e *env, args []string) error {
	c, err := parseAdviseFlags(e, args)
	if err != nil {
		return err
	}
	src, dst := c.src, c.dst
	log := warnLogger(e)
	st := hist.OpenOrOff(ctx, hist.DSN(c.dsn), log)
	defer st.Close()
	k := probe.KernelLimits()
	in := advisor.Input{Src: src.export().HistoryEndpoint(), Dst: dst.export().HistoryEndpoint(), Size: c.size, Files: c.files, Stripes: c.stripes, Kernel: k}
	in.ClientHost, _ = transfer.ClientIdentity()
	if c.size == 0 && src.kind == locLocal {
		if fi, err := os.Stat(src.path); err == nil && fi.Mode().IsRegular() {
			in.Size = fi.Size()
		}
	}
	fresh, calib, err := adviseServers(ctx, e, c, &in, st, log)
	if err != nil {
		return err
	}

	start := time.Now()
	if in.Records, err = st.Records(ctx, hist.Filter{Limit: 20000}); err != nil {
		log.Warn("history: records not read", "err", err)
	}
	if in.Probes, err = st.Probes(ctx, hist.Filter{Limit: 2000}); err != nil {
		log.Warn("history: probes not read", "err", err)
	}
	// What this run measured counts even when the history is off.
	in.Records = appendMissing(in.Records, calib)
	if len(fresh) == 1 {
		in.Probe = &fresh[0]
	} else {
		in.Probes = append(in.Probes, fresh...)
	}
	a := advisor.Advise(in)
	took := time.Since(start)
	r := newAdviceReport(c.srcArg, c.dstArg, in, a, took)
	if c.asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	r.print(e.stdout)
	return nil
}

// adviseServers does what needs the servers (SIZE, probes, calibration)
// and returns the probes and calibration records it made.
func adviseServers(ctx context.Context, e *env, c *adviseConfig, in *advisor.Input, st hist.Store, log *slog.Logger) (fresh []hist.Probe, calib []hist.Record, err error) {
	src := c.src
	needSize := in.Size == 0 && src.kind == locRemote
	for _, loc := range []location{src, c.dst} {
		if loc.kind != locRemote || !(c.doProbe || c.calibrate || needSize && loc == src) {
			continue
		}
		conn, err := connect(ctx, loc, clientOptions{active: c.active, gsi: &c.g})
		if err != nil {
			if !c.doProbe && !c.calibrate {
				// Only the size was wanted: advise without it.
				fmt.Fprintf(e.stderr, "ferry advise: size of %s unknown (%v): give -size for an ETA\n", loc, err)
				continue
			}
			return nil, nil, err
		}
		err = adviseSession(ctx, e, conn, loc, loc == src, in, st, c.doProbe, c.calibrate, &fresh, &calib, log)
		if err != nil {
			conn.Close()
			return nil, nil, err
		}
		hangUp(ctx, conn)
	}
	return fresh, calib, nil
}

// adviseSession does, on one server, what advise needs of it: the size
// of SRC, a probe, a calibration grid.
func adviseSession(ctx context.Context, e *env, c *client.Conn, loc location, isSrc bool, in *advisor.Input,
	st hist.Store, doProbe, calibrate bool, fresh *[]hist.Probe, calib *[]hist.Record, log *slog.Logger) error {
	if isSrc && in.Size == 0 {
		if n, err := c.Size(ctx, loc.path); err == nil {
			in.Size = n
		} else {
			fmt.Fprintf(e.stderr, "ferry advise: size of %s unknown (%v): give -size for an ETA\n", loc, describe(err))
		}
	}
	var rtt time.Duration
	if doProbe {
		p := loc.path
		if !isSrc {
			p = parentDir(p) // the destination need not exist yet
		}
		r, err := probe.Run(ctx, c, probe.Options{Endpoint: loc.export().HistoryEndpoint(), Path: p, Kernel: &in.Kernel})
		if err != nil {
			return &opError{What: "probe of " + loc.String(), Err: err}
		}
		if r.ID, err = st.AddProbe(ctx, &r.Probe); err != nil {
			log.Warn("history: probe not stored", "err", err)
		}
		*fresh = append(*fresh, r.Probe)
		rtt = r.Link.RTT
	}
	if calibrate {
		o := probe.CalibrateOptions{Src: in.Src, Dst: in.Dst, Path: loc.path, Grid: probe.Grid(in.Kernel), RTT: rtt}
		if !isSrc {
			o.Upload, o.Path = true, loc.path+".ferry-calibrate"
		}
		fmt.Fprintf(e.stderr, "calibrating %s: %d test transfers…\n", loc, len(o.Grid))
		recs, err := probe.Calibrate(ctx, c, o)
		host, user := transfer.ClientIdentity()
		for i := range recs {
			recs[i].ClientHost, recs[i].User = host, user
			id, aerr := st.Add(ctx, &recs[i])
			if aerr != nil {
				log.Warn("history: calibration not stored", "err", aerr)
			}
			recs[i].ID = id
		}
		*calib = append(*calib, recs...)
		if err != nil {
			return &opError{What: "calibration of " + loc.String(), Err: err}
		}
	}
	return nil
}

// appendMissing appends the records of extra whose ID is not in recs
// (all of them when the history is off and they have no ID).
func appendMissing(recs, extra []hist.Record) []hist.Record {
	have := map[int64]bool{}
	for _, r := range recs {
		have[r.ID] = true
	}
	for _, r := range extra {
		if r.ID == 0 || !have[r.ID] {
			recs = append(recs, r)
		}
	}
	return recs
}

func parentDir(p string) string {
	if i := strings.LastIndex(strings.TrimSuffix(p, "/"), "/"); i >= 0 {
		return p[:i+1]
	}
	return ""
}

// adviceReport is the JSON form of an advice; its field names are
// stable (rates in bytes per second, durations in seconds).
type adviceReport struct {
	SrcURL        string    `json:"src"`
	DstURL        string    `json:"dst"`
	Size          int64     `json:"size"` // 0: unknown
	Files         int       `json:"files"`
	Params        paramsOut `json:"params"`
	Command       string    `json:"command"`
	PredictedRate float64   `json:"predicted_rate"`
	ETA           float64   `json:"eta_s"`
	ETALow        float64   `json:"eta_low_s"`
	ETAHigh       float64   `json:"eta_high_s"`
	Basis         string    `json:"basis"`
	Reason        string    `json:"reason"`
	Records       []int64   `json:"records"`
	Probe         int64     `json:"probe,omitempty"`
	Limit         string    `json:"limit,omitempty"`
	BufferCap     string    `json:"buffer_cap,omitempty"`
	HistoryRecs   int       `json:"history_records"`
	HistoryProbes int       `json:"history_probes"`
	Took          float64   `json:"took_s"`
}

func newAdviceReport(src, dst string, in advisor.Input, a advisor.Advice, took time.Duration) adviceReport {
	recs := a.Records
	if recs == nil {
		recs = []int64{}
	}
	return adviceReport{
		SrcURL: redactURL(src), DstURL: redactURL(dst), Size: in.Size, Files: max(in.Files, 1),
		Params: paramsOf(a.Params), Command: cpCommand(a.Params, redactURL(src), redactURL(dst)),
		PredictedRate: a.PredictedRate, ETA: a.ETA.Seconds(), ETALow: a.ETALow.Seconds(), ETAHigh: a.ETAHigh.Seconds(),
		Basis: string(a.Basis), Reason: a.Reason, Records: recs, Probe: a.Probe, Limit: a.Limit, BufferCap: a.BufferCap,
		HistoryRecs: len(in.Records), HistoryProbes: len(in.Probes), Took: took.Seconds(),
	}
}

// cpCommand is the ferry cp command line with p.
func cpCommand(p hist.Params, src, dst string) string {
	args := []string{"ferry", "cp"}
	if p.Parallel > 1 {
		args = append(args, "-p", fmt.Sprint(p.Parallel))
	}
	if p.TCPBuffer > 0 {
		args = append(args, "-tcp-bs", progress.Size(int64(p.TCPBuffer)))
	}
	if p.BlockSize > 0 {
		args = append(args, "-bs", progress.Size(int64(p.BlockSize)))
	}
	if p.Concurrency > 1 {
		args = append(args, "-cc", fmt.Sprint(p.Concurrency))
	}
	if p.Pipeline {
		args = append(args, "-pp")
	}
	if p.Stripes > 1 {
		args = append(args, "-stripe")
	}
	return strings.Join(append(args, src, dst), " ")
}

func (r adviceReport) print(w io.Writer) {
	fmt.Fprintf(w, "suggested   %s\n", r.Command)
	if r.PredictedRate > 0 {
		fmt.Fprintf(w, "rate        %s/s (%s)\n", progress.Bytes(float64(r.PredictedRate)), progress.Bits(8*r.PredictedRate))
	} else {
		fmt.Fprintf(w, "rate        unknown\n")
	}
	switch {
	case r.ETA > 0:
		what := progress.Bytes(float64(r.Size))
		if r.Files > 1 {
			what = fmt.Sprintf("%d files of %s", r.Files, what)
		}
		fmt.Fprintf(w, "ETA         %s (%s – %s) for %s\n", fmtSecs(r.ETA), fmtSecs(r.ETALow), fmtSecs(r.ETAHigh), what)
	case r.Size == 0:
		fmt.Fprintf(w, "ETA         unknown: give -size\n")
	default:
		fmt.Fprintf(w, "ETA         unknown\n")
	}
	fmt.Fprintf(w, "basis       %s\n", r.Basis)
	fmt.Fprintf(w, "why         %s\n", r.Reason)
	fmt.Fprintf(w, "took        %s (%d records, %d probes)\n", fmtSecs(r.Took), r.HistoryRecs, r.HistoryProbes)
}

func fmtSecs(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}
