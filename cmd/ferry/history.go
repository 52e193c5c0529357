package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/progress"
)

func init() {
	register(&command{
		name:    "history",
		summary: "list past transfers, the per-link summary or the probes",
		usage:   "[links|probes] [flags]",
		help:    historyHelp,
		run:     runHistory,
	})
}

const historyHelp = `
views:
  (none)   the transfers, newest first: start, kind, source → destination,
           size, rate, parallel streams (-p), TCP buffer, outcome
  links    per (source host, destination host): transfers, failures,
           bytes, mean and best rate, the parameters of the best, RTT
  probes   the link probes, newest first

The database is -history, else $FERRY_HISTORY, else the SQLite file
$XDG_DATA_HOME/ferry/history.db (~/.local/share/ferry/history.db). A
DSN is a file path, a postgres://user@host:port/db URL, or "off".

-json prints one JSON array, -csv a header row and a row per item; their
field names are stable: nested fields are joined by "_" in CSV
(src_host, params_parallel), times are RFC 3339 in UTC, durations are
seconds (rtt_s), rates bytes per second (bandwidth_bps: bits).
`

// historyViews are the verbs of ferry history; "" is the transfers.
var historyViews = map[string]string{
	"":          "list past transfers, newest first",
	"transfers": "list past transfers, newest first",
	"links":     "sum the transfers per (source host, destination host)",
	"probes":    "list the link probes, newest first",
}

func runHistory(ctx context.Context, e *env, args []string) error {
	c := commands["history"]
	view := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if _, ok := historyViews[args[0]]; !ok {
			return usagef("unknown view %q (want links or probes, or none for the transfers)", args[0])
		}
		view, args = args[0], args[1:]
		c = &command{name: "history " + view, summary: historyViews[view], usage: "[flags]", help: historyHelp}
	}
	fs := newFlagSet(c, e)
	dsn := fs.String("history", "", historyDSNUsage)
	asJSON := fs.Bool("json", false, "print one JSON array")
	asCSV := fs.Bool("csv", false, "print CSV: a header row, then a row per item")
	since := fs.String("since", "", "only since `WHEN`: a duration back from now (90m, 24h, 7d) or a local date or time (2026-03-14, 2026-03-14T15:04)")
	host := fs.String("host", "", "only transfers or probes with `HOST` at either end")
	failed := fs.Bool("failed", false, "only failed transfers")
	n := fs.Int("n", 50, "at most `N` items, the newest (links: the pairs used last); 0: all")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected argument %q (a view, links or probes, comes before the flags)", fs.Arg(0))
	}
	if *asJSON && *asCSV {
		return usagef("-json and -csv exclude each other")
	}
	if *n < 0 {
		return usagef("-n must not be negative")
	}
	f := hist.Filter{Host: *host, Limit: *n}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return usagef("-since: %v", err)
		}
		f.Since = t
	}
	if *failed {
		if view == "probes" {
			return usagef("-failed applies to transfers, not probes")
		}
		f.Outcome = hist.Failed
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := hist.Open(ctx, hist.DSN(*dsn), log)
	if err != nil {
		// "ferry history: " already says whose error it is.
		return errors.New(strings.TrimPrefix(err.Error(), "history: ") + " (name another with -history DSN or $" + hist.EnvDSN + ")")
	}
	defer st.Close()

	format := "table"
	switch {
	case *asJSON:
		format = "json"
	case *asCSV:
		format = "csv"
	}
	switch view {
	case "links":
		links, err := st.Links(ctx, f)
		if err != nil {
			return err
		}
		items := make([]linkOut, len(links))
		for i, l := range links {
			items[i] = linkOf(l)
		}
		return printHistory(e.stdout, format, items, linksTable)
	case "probes":
		probes, err := st.Probes(ctx, f)
		if err != nil {
			return err
		}
		items := make([]probeOut, len(probes))
		for i, p := range probes {
			items[i] = probeOf(p)
		}
		return printHistory(e.stdout, format, items, probesTable)
	default:
		records, err := st.Records(ctx, f)
		if err != nil {
			return err
		}
		items := make([]recordOut, len(records))
		for i, r := range records {
			items[i] = recordOf(r)
		}
		return printHistory(e.stdout, format, items, recordsTable)
	}
}

// parseSince reads -since: a duration back from now (time.ParseDuration,
// or a number of days "7d"), or a date or time in the local zone, or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil && n >= 0 && n <= 1e5 {
			return now.Add(-time.Duration(n * 24 * float64(time.Hour))), nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (24h, 7d) nor a date (2006-01-02[T15:04[:05]])", s)
}

// The JSON and CSV forms of history items. Their field names are part of
// ferry's interface: add fields, never rename them. CSV flattens nested
// structs, joining the names with "_".

type endpointOut struct {
	Scheme string `json:"scheme"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Domain string `json:"domain"`
}

type paramsOut struct {
	Mode        string `json:"mode"`
	Parallel    int    `json:"parallel"`
	TCPBuffer   int    `json:"tcp_buffer"`
	BlockSize   int    `json:"block_size"`
	Concurrency int    `json:"concurrency"`
	Pipeline    bool   `json:"pipeline"`
	Stripes     int    `json:"stripes"`
	DCAU        string `json:"dcau"`
	Prot        string `json:"prot"`
	Auto        bool   `json:"auto"`
}

type linkMeasureOut struct {
	RTT         float64 `json:"rtt_s"`
	Bandwidth   float64 `json:"bandwidth_bps"`
	Retransmits int64   `json:"retransmits"`
	LossRate    float64 `json:"loss_rate"`
}

type recordOut struct {
	ID           int64          `json:"id"`
	Start        time.Time      `json:"start"`
	End          time.Time      `json:"end"`
	Kind         string         `json:"kind"`
	Tool         string         `json:"tool"`
	Src          endpointOut    `json:"src"`
	Dst          endpointOut    `json:"dst"`
	SrcPath      string         `json:"src_path"`
	DstPath      string         `json:"dst_path"`
	Size         int64          `json:"size"`
	Bytes        int64          `json:"bytes"`
	Duration     float64        `json:"duration_s"`
	Rate         float64        `json:"rate"`
	Outcome      string         `json:"outcome"`
	Error        string         `json:"error"`
	Params       paramsOut      `json:"params"`
	Link         linkMeasureOut `json:"link"`
	StreamRates  []float64      `json:"stream_rates"`
	PredictedETA float64        `json:"predicted_eta_s"`
	Tuning       string         `json:"tuning"`
	ClientHost   string         `json:"client_host"`
	User         string         `json:"user"`
}

type linkOut struct {
	Src        endpointOut `json:"src"`
	Dst        endpointOut `json:"dst"`
	Transfers  int         `json:"transfers"`
	Failures   int         `json:"failures"`
	Bytes      int64       `json:"bytes"`
	MeanRate   float64     `json:"mean_rate"`
	BestRate   float64     `json:"best_rate"`
	BestParams paramsOut   `json:"best_params"`
	RTT        float64     `json:"rtt_s"`
	Bandwidth  float64     `json:"bandwidth_bps"`
	Last       time.Time   `json:"last"`
}

type probeOut struct {
	ID        int64          `json:"id"`
	Time      time.Time      `json:"time"`
	Src       endpointOut    `json:"src"`
	Dst       endpointOut    `json:"dst"`
	Link      linkMeasureOut `json:"link"`
	MaxBuffer int            `json:"max_buffer"`
	Features  []string       `json:"features"`
	Note      string         `json:"note"`
}

func endpointOf(e hist.Endpoint) endpointOut {
	return endpointOut{Scheme: e.Scheme, Host: e.Host, Port: e.Port, Domain: e.Domain}
}

func paramsOf(p hist.Params) paramsOut {
	return paramsOut{Mode: p.Mode, Parallel: p.Parallel, TCPBuffer: p.TCPBuffer, BlockSize: p.BlockSize,
		Concurrency: p.Concurrency, Pipeline: p.Pipeline, Stripes: p.Stripes, DCAU: p.DCAU, Prot: p.Prot, Auto: p.Auto}
}

func linkMeasureOf(l hist.Link) linkMeasureOut {
	return linkMeasureOut{RTT: l.RTT.Seconds(), Bandwidth: l.Bandwidth, Retransmits: l.Retransmits, LossRate: l.LossRate}
}

func recordOf(r hist.Record) recordOut {
	rates := r.StreamRates
	if rates == nil {
		rates = []float64{}
	}
	return recordOut{
		ID: r.ID, Start: r.Start.UTC(), End: r.End.UTC(), Kind: r.Kind, Tool: r.Tool,
		Src: endpointOf(r.Src), Dst: endpointOf(r.Dst), SrcPath: r.SrcPath, DstPath: r.DstPath,
		Size: r.Size, Bytes: r.Bytes, Duration: r.Duration.Seconds(), Rate: r.Rate(),
		Outcome: r.Outcome, Error: r.Error, Params: paramsOf(r.Params), Link: linkMeasureOf(r.Link),
		StreamRates: rates, PredictedETA: r.PredictedETA.Seconds(), Tuning: r.Tuning,
		ClientHost: r.ClientHost, User: r.User,
	}
}

func linkOf(l hist.LinkSummary) linkOut {
	return linkOut{
		Src: endpointOf(l.Src), Dst: endpointOf(l.Dst), Transfers: l.Transfers, Failures: l.Failures,
		Bytes: l.Bytes, MeanRate: l.MeanRate, BestRate: l.BestRate, BestParams: paramsOf(l.BestParams),
		RTT: l.RTT.Seconds(), Bandwidth: l.Bandwidth, Last: l.Last.UTC(),
	}
}

func probeOf(p hist.Probe) probeOut {
	feat := p.Features
	if feat == nil {
		feat = []string{}
	}
	return probeOut{ID: p.ID, Time: p.Time.UTC(), Src: endpointOf(p.Src), Dst: endpointOf(p.Dst),
		Link: linkMeasureOf(p.Link), MaxBuffer: p.MaxBuffer, Features: feat, Note: p.Note}
}

// printHistory prints items as a table (with table), JSON or CSV.
func printHistory[T any](w io.Writer, format string, items []T, table func(io.Writer, []T) error) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(items)
	case "csv":
		cw := csv.NewWriter(w)
		var zero T
		header, _ := flatten(reflect.ValueOf(zero), "", nil, nil)
		if err := cw.Write(header); err != nil {
			return err
		}
		for _, it := range items {
			_, row := flatten(reflect.ValueOf(it), "", nil, nil)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if err := table(tw, items); err != nil {
		return err
	}
	return tw.Flush()
}

// flatten appends to names and values the CSV columns of the struct v:
// its fields by their JSON names, nested structs' fields prefixed with
// the struct's name and "_", lists joined with ";".
func flatten(v reflect.Value, prefix string, names, values []string) ([]string, []string) {
	t := v.Type()
	for i := range t.NumField() {
		name := prefix + strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		fv := v.Field(i)
		if tm, ok := fv.Interface().(time.Time); ok {
			names, values = append(names, name), append(values, tm.Format(time.RFC3339Nano))
			continue
		}
		if fv.Kind() == reflect.Struct {
			names, values = flatten(fv, name+"_", names, values)
			continue
		}
		names, values = append(names, name), append(values, csvValue(fv))
	}
	return names, values
}

// csvValue is the text of one CSV cell.
func csvValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = csvValue(v.Index(i))
		}
		return strings.Join(parts, ";")
	}
	return fmt.Sprint(v.Interface())
}

// side is one end of a transfer for a table: host:path, or the path of
// a local file.
func side(e endpointOut, path string) string {
	if e.Host == "" {
		return path
	}
	return e.Host + ":" + path
}

// pair is "src → dst" for a table; a probe of one server is its host.
func pair(src, dst endpointOut) string {
	name := func(e endpointOut) string {
		if e.Host == "" {
			return "local"
		}
		return e.Host
	}
	if dst == (endpointOut{}) {
		return name(src)
	}
	return name(src) + " → " + name(dst)
}

// localTime is t for a table: local time to the second.
func localTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rateText is a rate in bytes per second for a table; "-" when unknown.
func rateText(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	return progress.Bytes(bps) + "/s"
}

// bufferText is a TCP buffer size for a table; 0 is the system's default.
func bufferText(n int) string {
	if n <= 0 {
		return "default"
	}
	return progress.Size(int64(n))
}

// seconds is a duration in seconds (as JSON holds it) for a table.
func seconds(s float64) string {
	if s <= 0 {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}

// bitRate is a link bandwidth in bits per second for a table.
func bitRate(bps float64) string {
	switch {
	case bps <= 0:
		return "-"
	case bps >= 1e9:
		return progress.Rate(bps/1e9) + " Gbit/s"
	}
	return progress.Rate(bps/1e6) + " Mbit/s"
}

// shorten cuts s to n runes, marking the cut with "…".
func shorten(s string, n int) string {
	r := []rune(strings.ReplaceAll(s, "\n", " "))
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func recordsTable(w io.Writer, rs []recordOut) error {
	fmt.Fprintln(w, "START\tKIND\tSRC → DST\tSIZE\tRATE\t-P\tBUFFER\tOUTCOME")
	for _, r := range rs {
		size := "?"
		if r.Size >= 0 {
			size = progress.Bytes(float64(r.Size))
		}
		outcome := r.Outcome
		if r.Error != "" {
			outcome += ": " + shorten(r.Error, 60)
		}
		fmt.Fprintf(w, "%s\t%s\t%s → %s\t%s\t%s\t%d\t%s\t%s\n", localTime(r.Start), orDash(r.Kind),
			side(r.Src, r.SrcPath), side(r.Dst, r.DstPath), size, rateText(r.Rate),
			r.Params.Parallel, bufferText(r.Params.TCPBuffer), outcome)
	}
	return nil
}

func linksTable(w io.Writer, ls []linkOut) error {
	fmt.Fprintln(w, "SRC → DST\tTRANSFERS\tFAILED\tBYTES\tMEAN RATE\tBEST RATE\tBEST -P\tBUFFER\tRTT\tLAST")
	for _, l := range ls {
		bestP, buf := "-", "-"
		if l.BestRate > 0 {
			bestP, buf = strconv.Itoa(l.BestParams.Parallel), bufferText(l.BestParams.TCPBuffer)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pair(l.Src, l.Dst), l.Transfers, l.Failures,
			progress.Bytes(float64(l.Bytes)), rateText(l.MeanRate), rateText(l.BestRate), bestP, buf,
			seconds(l.RTT), localTime(l.Last))
	}
	return nil
}

func probesTable(w io.Writer, ps []probeOut) error {
	fmt.Fprintln(w, "TIME\tSRC → DST\tRTT\tBANDWIDTH\tRETRANS\tMAX BUFFER\tNOTE")
	for _, p := range ps {
		retrans, maxBuf := "-", "-"
		if p.Link.Retransmits >= 0 {
			retrans = strconv.FormatInt(p.Link.Retransmits, 10)
		}
		if p.MaxBuffer > 0 {
			maxBuf = progress.Size(int64(p.MaxBuffer))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", localTime(p.Time), pair(p.Src, p.Dst),
			seconds(p.Link.RTT), bitRate(p.Link.Bandwidth), retrans, maxBuf, p.Note)
	}
	return nil
}
