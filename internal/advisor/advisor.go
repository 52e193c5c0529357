// Package advisor suggests transfer parameters (parallel streams, TCP
// buffer, block size, concurrency, pipelining, stripes) for a transfer
// between two endpoints, predicts its rate and an ETA with a range, and
// says why.
//
// It follows Cannataro et al., "Evaluating and Enhancing the Use of the
// GridFTP Protocol for Efficient Data Transfer on the Grid" (the seed
// paper of issue 15): first type the connection, then take the best
// parameters of the past transfers of that type. The connection type is
// tried in this order, each a Basis:
//
//  1. HostPair: past transfers between the same two hosts;
//  2. DomainPair: past transfers between the same two domains (sites);
//  3. SimilarLink: past transfers over the link nearest to this one by
//     round-trip time, bandwidth and loss (the probe says what this
//     link is), when near enough;
//  4. Model: no usable past transfer, but a probe: the bandwidth-delay
//     product with this kernel's buffer overhead, the Mathis et al.
//     loss bound and the buffer limits of both ends;
//  5. Default: neither history nor probe.
//
// The package is pure: Advise does no I/O and reads no clock; the caller
// fetches the records and probes (internal/history) and the kernel's
// limits (internal/probe.KernelLimits) and passes them in Input.
package advisor

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/progress"
)

// Basis names the kind of evidence an Advice rests on.
type Basis string

// The bases, from the strongest evidence to none.
const (
	HostPair    Basis = "host-pair"    // past transfers between the same hosts
	DomainPair  Basis = "domain-pair"  // past transfers between the same domains
	SimilarLink Basis = "similar-link" // past transfers over a link like this one
	Model       Basis = "model"        // a probe and the TCP throughput model
	Default     Basis = "default"      // nothing known
)

// Kernel holds this host's TCP buffer limits, in bytes (Linux sysctls);
// a zero field is unknown.
type Kernel struct {
	RmemMax int    // net.core.rmem_max: the largest SO_RCVBUF granted
	WmemMax int    // net.core.wmem_max: the largest SO_SNDBUF granted
	TCPRmem [3]int // net.ipv4.tcp_rmem: min, default, max (autotuning)
	TCPWmem [3]int // net.ipv4.tcp_wmem: min, default, max (autotuning)
}

// Input is what Advise works from. The zero Input is valid and gets the
// Default advice.
type Input struct {
	// Src and Dst are the ends of the transfer to advise on (a local
	// file is the Endpoint {Scheme: "file"}).
	Src, Dst history.Endpoint
	// Size is the size of each file in bytes; 0 or less: unknown (the
	// ETA is then not computed).
	Size int64
	// Files is the number of files of that size; 0 or less means 1.
	Files int
	// Stripes is how many stripes the servers can use (SPAS/SPOR); 0 or
	// 1: not striped.
	Stripes int
	// Records are past transfers, in any order; Advise uses the
	// successful ones. They are not changed.
	Records []history.Record
	// Probes are past probes, in any order.
	Probes []history.Probe
	// Probe is a fresh probe of this link, preferred to Probes; nil: none.
	Probe *history.Probe
	// Kernel is this host's buffer limits.
	Kernel Kernel
	// ClientHost is this host's name. When set, a past transfer with a
	// local end counts as the same host pair only if it ran here too
	// (its ClientHost is this one or unknown): a history shared between
	// hosts holds other hosts' "local" ends.
	ClientHost string
	// User, when not "", is who asks (a user of a shared history, as
	// in ferry web): the Reason then names no host of another user's
	// records, only how many of theirs the advice rests on.
	User string
}

// Advice is what Advise suggests.
type Advice struct {
	// Params are the suggested parameters (Auto set).
	Params history.Params
	// PredictedRate is the expected rate in bytes per second; 0 unknown.
	PredictedRate float64
	// ETA is the expected duration of the whole transfer (Files × Size),
	// ETALow and ETAHigh its likely range; all 0 when Size or the rate
	// is unknown.
	ETA, ETALow, ETAHigh time.Duration
	// Basis is the kind of evidence used.
	Basis Basis
	// Reason explains the choice for a person: which records or probe,
	// which model and which limit.
	Reason string
	// Records are the IDs of the past transfers the advice rests on,
	// those of the chosen parameters first; nil for Model and Default.
	Records []int64
	// Probe is the ID of the stored probe used (0: none, or a fresh one).
	Probe int64
	// Limit names what bounds the predicted rate under the model: "link",
	// "window", "loss" or "" (history-based or unknown).
	Limit string
	// BufferCap names the sysctl that caps the TCP buffer this link
	// would need (e.g. "net.core.rmem_max"), "" when none does.
	BufferCap string

	rateLow, rateHigh float64 // the likely range of the rate, for the ETA
}

// Defaults, used when nothing is known.
const (
	DefaultParallel = 4
	// MaxParallel bounds the streams the model suggests.
	MaxParallel = 16
	// MaxConcurrency bounds the files at once suggested for many files.
	MaxConcurrency = 8
	// smallFile is the size under which per-file latency dominates and
	// pipelining (-pp) pays.
	smallFile = 8 << 20
)

// The constants of the TCP model (see /work/shared/wan.md and
// internal/bench/theory.go, where they were measured).
const (
	mss = 1448 // TCP payload of a 1500-byte packet with timestamps
	// mathisC is the constant of the Mathis et al. bound MSS/RTT × C/√p.
	mathisC = 1.22
	// windowFactor is this kernel's send window per byte of SO_RCVBUF
	// asked for: Linux doubles the request and keeps about a third of it
	// for its own overhead (tcp_adv_win_scale), measured 1.32.
	windowFactor = 1.32
	// autotuneFactor is the send window per byte of tcp_rmem's maximum
	// when the kernel tunes the buffer itself, measured 0.66.
	autotuneFactor = 0.66
	// minBuffer is the smallest explicit buffer the model suggests.
	minBuffer = 64 << 10
)

// Advise returns the advice for in. It runs in time linear in the number
// of records and probes.
func Advise(in Input) Advice {
	files := max(in.Files, 1)
	ok := make([]*history.Record, 0, len(in.Records))
	for i := range in.Records {
		r := &in.Records[i]
		if r.Outcome == history.OK && r.Bytes > 0 && r.Duration > 0 {
			ok = append(ok, r)
		}
	}

	// 1 and 2: the same hosts, then the same domains.
	var host, domain []*history.Record
	for _, r := range ok {
		here := in.ClientHost == "" || r.ClientHost == "" || r.ClientHost == in.ClientHost ||
			!isLocal(in.Src) && !isLocal(in.Dst)
		if here && sameHosts(r.Src, in.Src) && sameHosts(r.Dst, in.Dst) {
			host = append(host, r)
		} else if sameDomain(r.Src, in.Src) && sameDomain(r.Dst, in.Dst) {
			domain = append(domain, r)
		}
	}
	host, farHost := comparable(host, in.Size)
	domain, farDomain := comparable(domain, in.Size)
	okNear, _ := comparable(ok, in.Size)
	probe, probeDesc := linkProbe(in)
	var a Advice
	switch {
	case len(host) > 0:
		a = fromRecords(in, host, HostPair, 0.15)
		a.Reason = fmt.Sprintf("%d past transfer(s) %s → %s; ", len(host), hostName(in.Src), hostName(in.Dst)) + a.Reason
	case len(domain) > 0:
		a = fromRecords(in, domain, DomainPair, 0.25)
		a.Reason = fmt.Sprintf("no past transfer between these hosts; %d between domains %s → %s; ", len(domain), domainName(in.Src), domainName(in.Dst)) + a.Reason
	default:
		if probe != nil {
			if near, desc := nearestLink(okNear, probe.Link, in.User); near != nil {
				a = fromRecords(in, near, SimilarLink, 0.4)
				a.Reason = fmt.Sprintf("no past transfer between these hosts or domains; the nearest link is %s (%s); ", desc, probeDesc) + a.Reason
				break
			}
			a = fromModel(in, probe)
			a.Reason = fmt.Sprintf("no past transfer over this or a similar link; model from %s: ", probeDesc) + a.Reason
			break
		}
		a = defaults(in)
	}
	if far := farHost + farDomain; far > 0 && a.Basis != HostPair && a.Basis != DomainPair {
		a.Reason = fmt.Sprintf("%d past transfer(s) of this link moved much smaller files, whose rates say little about %s files; ",
			far, progress.Bytes(float64(in.Size))) + a.Reason
	}
	if probe != nil && a.Basis != Default {
		a.Probe = probe.ID
	}
	a.Params.Auto = true
	if in.Stripes > 1 && a.Params.Stripes <= 1 {
		a.Params.Stripes = in.Stripes
		a.Params.Mode = "E"
		a.Reason += fmt.Sprintf("; the servers stripe: %d stripes", in.Stripes)
	}
	many(&a, in, files, probe)
	capBuffer(&a, in, probe)
	eta(&a, in, files, probe)
	return a
}

// farSize is how much smaller than the file asked about a past file may
// be for its rate to count: small files are bound by round trips, so a
// 16 KiB copy's rate says nothing of a 300 MiB file's. A larger file's
// rate does count for a smaller one (it bounds it, and the ETA adds the
// round trips of each file).
const farSize = 64

// comparable picks the records of recs whose rates say something about
// a file of size target: those within farSize of it either way; when
// there are none, those of much larger files (their rates bound a small
// file's). far counts the much smaller ones, left out. All count when
// target is unknown.
func comparable(recs []*history.Record, target int64) (use []*history.Record, far int) {
	if target <= 0 {
		return recs, 0
	}
	var near, larger []*history.Record
	for _, r := range recs {
		switch size := cmp.Or(r.Size, r.Bytes); {
		case size*farSize < target:
			far++
		case size > target*farSize:
			larger = append(larger, r)
		default:
			near = append(near, r)
		}
	}
	if len(near) > 0 {
		return near, far
	}
	return larger, far
}

// sameHosts reports whether a and b are the same host (two local files
// are the same host).
func sameHosts(a, b history.Endpoint) bool {
	return a.Host == b.Host && isLocal(a) == isLocal(b)
}

func sameDomain(a, b history.Endpoint) bool {
	return a.Domain == b.Domain && isLocal(a) == isLocal(b)
}

func isLocal(e history.Endpoint) bool { return e.Scheme == "file" || e.Host == "" }

func hostName(e history.Endpoint) string {
	if isLocal(e) {
		return "local"
	}
	return e.Host
}

func domainName(e history.Endpoint) string {
	if isLocal(e) {
		return "local"
	}
	return e.Domain
}

// linkProbe returns the probe that describes the link of in: the fresh
// one, else the newest stored probe of the same pair, else the newest of
// each remote end, combined conservatively. nil when none.
func linkProbe(in Input) (*history.Probe, string) {
	if in.Probe != nil {
		return in.Probe, "a fresh probe" + probeFacts(in.Probe)
	}
	var pair, src, dst *history.Probe
	newer := func(cur *history.Probe, p *history.Probe) *history.Probe {
		if cur == nil || p.Time.After(cur.Time) || (p.Time.Equal(cur.Time) && p.ID > cur.ID) {
			return p
		}
		return cur
	}
	for i := range in.Probes {
		p := &in.Probes[i]
		single := p.Dst == (history.Endpoint{})
		switch {
		case !single && sameHosts(p.Src, in.Src) && sameHosts(p.Dst, in.Dst):
			pair = newer(pair, p)
		case single && !isLocal(in.Src) && p.Src.Host == in.Src.Host:
			src = newer(src, p)
		case single && !isLocal(in.Dst) && p.Src.Host == in.Dst.Host:
			dst = newer(dst, p)
		}
	}
	stored := func(p *history.Probe) (*history.Probe, string) {
		return p, fmt.Sprintf("probe #%d of %s", p.ID, p.Time.UTC().Format(time.DateTime)) + probeFacts(p)
	}
	switch {
	case pair != nil:
		return stored(pair)
	case src != nil && dst != nil:
		// A third-party transfer probed from here end by end: the
		// slower end's bandwidth, the longer RTT, the higher loss.
		c := *src
		c.Link.RTT = max(src.Link.RTT, dst.Link.RTT)
		c.Link.Bandwidth = MinKnown(src.Link.Bandwidth, dst.Link.Bandwidth)
		c.Link.LossRate = max(src.Link.LossRate, dst.Link.LossRate)
		c.MaxBuffer = MinKnown(src.MaxBuffer, dst.MaxBuffer)
		return &c, fmt.Sprintf("probes #%d and #%d of each end", src.ID, dst.ID) + probeFacts(&c)
	case src != nil:
		return stored(src)
	case dst != nil:
		return stored(dst)
	}
	return nil, ""
}

// MinKnown is the smaller of a and b where zero or less means unknown:
// the known one when only one is.
func MinKnown[T int | int64 | float64](a, b T) T {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

func probeFacts(p *history.Probe) string {
	return fmt.Sprintf(" (RTT %s, bandwidth %s, loss %.2g%%)", fmtRTT(p.Link.RTT), progress.Bits(p.Link.Bandwidth), 100*p.Link.LossRate)
}

func fmtRTT(d time.Duration) string {
	if d <= 0 {
		return "unknown"
	}
	return d.Round(10 * time.Microsecond).String()
}

// paramsKey identifies a parameter set for grouping (Auto and the
// security settings do not change the speed much and are not grouped).
type paramsKey struct {
	mode                    string
	parallel, buffer, block int
	concurrency, stripes    int
	pipeline                bool
}

func keyOf(p history.Params) paramsKey {
	return paramsKey{p.Mode, max(p.Parallel, 1), p.TCPBuffer, p.BlockSize, max(p.Concurrency, 1), max(p.Stripes, 1), p.Pipeline}
}

func (k paramsKey) less(o paramsKey) int {
	return cmp.Or(cmp.Compare(k.parallel, o.parallel), cmp.Compare(k.buffer, o.buffer),
		cmp.Compare(k.block, o.block), cmp.Compare(k.concurrency, o.concurrency),
		cmp.Compare(k.stripes, o.stripes), cmp.Compare(k.mode, o.mode))
}

// group is the records of one parameter set.
type group struct {
	key     paramsKey
	params  history.Params // of the newest record
	newest  time.Time
	recs    []*history.Record
	weights []float64
	wsum    float64
	wrate   float64 // Σ weight × rate
}

func (g *group) mean() float64 { return g.wrate / g.wsum }

// score ranks groups: the size-weighted mean rate, shrunk a little for
// groups with little evidence so that one lucky run does not beat many
// consistent ones by a hair.
func (g *group) score() float64 { return g.mean() * g.wsum / (g.wsum + 0.5) }

// sizeWeight is how much a past transfer of size s says about one of
// size target: 1 for the same size, 1/e for a tenfold difference.
func sizeWeight(s, target int64) float64 {
	if s <= 0 || target <= 0 {
		return 0.5
	}
	return math.Exp(-math.Abs(math.Log10(float64(s) / float64(target))))
}

// fromRecords chooses the best parameter set among recs by rate, with
// file-size similarity as the weight, and predicts from its rates.
// spread is the least relative width of the rate range.
func fromRecords(in Input, recs []*history.Record, basis Basis, spread float64) Advice {
	groups := map[paramsKey]*group{}
	for _, r := range recs {
		size := r.Size
		if size <= 0 {
			size = r.Bytes
		}
		w := sizeWeight(size, in.Size)
		k := keyOf(r.Params)
		g := groups[k]
		if g == nil {
			g = &group{key: k}
			groups[k] = g
		}
		if r.Start.After(g.newest) || g.recs == nil {
			g.newest, g.params = r.Start, r.Params
		}
		g.recs = append(g.recs, r)
		g.weights = append(g.weights, w)
		g.wsum += w
		g.wrate += w * r.Rate()
	}
	var best *group
	for _, g := range groups {
		if best == nil {
			best = g
			continue
		}
		if s, bs := g.score(), best.score(); s > bs || (s == bs && g.key.less(best.key) < 0) {
			best = g
		}
	}
	rates := make([]float64, len(best.recs))
	for i, r := range best.recs {
		rates[i] = r.Rate()
	}
	slices.Sort(rates)
	rate := best.mean()
	lo, hi := quantile(rates, 0.25), quantile(rates, 0.75)
	lo, hi = min(lo, rate*(1-spread)), max(hi, rate*(1+spread))

	// The records used, the best group's newest first, at most 5 named.
	order := slices.Clone(best.recs)
	slices.SortFunc(order, func(a, b *history.Record) int { return cmp.Or(b.Start.Compare(a.Start), cmp.Compare(b.ID, a.ID)) })
	ids := make([]int64, len(order))
	for i, r := range order {
		ids[i] = r.ID
	}
	named := ids[:min(len(ids), 5)]
	var b strings.Builder
	fmt.Fprintf(&b, "the fastest of %d parameter set(s) is %s: %s mean over %d transfer(s) (#%s",
		len(groups), describeParams(best.params), progress.Bits(8*rate), len(best.recs), joinIDs(named))
	if len(ids) > len(named) {
		fmt.Fprintf(&b, ", …")
	}
	b.WriteString(")")
	if in.Size > 0 {
		fmt.Fprintf(&b, ", weighted by similarity to %s files", progress.Bytes(float64(in.Size)))
	}
	p := best.params
	p.Auto = false
	return Advice{
		Params:        p,
		PredictedRate: rate,
		Basis:         basis,
		Reason:        b.String(),
		Records:       ids,
		rateLow:       lo,
		rateHigh:      hi,
	}
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", #")
}

// quantile returns the q quantile of sorted xs (linear interpolation).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	f := q * float64(len(xs)-1)
	i := int(f)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (f-float64(i))*(xs[i+1]-xs[i])
}

func describeParams(p history.Params) string {
	var parts []string
	mode := p.Mode
	if mode == "" {
		mode = "S"
	}
	parts = append(parts, "MODE "+mode, fmt.Sprintf("-p %d", max(p.Parallel, 1)))
	if p.TCPBuffer > 0 {
		parts = append(parts, "-tcp-bs "+progress.Size(int64(p.TCPBuffer)))
	} else {
		parts = append(parts, "autotuned buffer")
	}
	if p.BlockSize > 0 {
		parts = append(parts, "-bs "+progress.Size(int64(p.BlockSize)))
	}
	if p.Concurrency > 1 {
		parts = append(parts, fmt.Sprintf("-cc %d", p.Concurrency))
	}
	if p.Pipeline {
		parts = append(parts, "-pp")
	}
	if p.Stripes > 1 {
		parts = append(parts, fmt.Sprintf("%d stripes", p.Stripes))
	}
	return strings.Join(parts, " ")
}

// linkOf summarises the links of records: the median known RTT,
// bandwidth (else the fastest rate seen, in bits) and loss rate.
type linkStats struct {
	rtt, bw, loss []float64
	fastest       float64
	recs          []*history.Record
	src, dst      string
}

func (s *linkStats) link() (rtt, bw, loss float64) {
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return quantile(xs, 0.5)
	}
	rtt, bw, loss = med(s.rtt), med(s.bw), med(s.loss)
	if bw == 0 {
		bw = s.fastest * 8
	}
	return
}

// nearestLink groups ok by host pair and returns the records of the pair
// whose link is nearest to l, if near enough: the distance is the sum of
// the absolute log ratios of RTT and bandwidth, plus half that of the
// loss rate (offset by 10⁻⁴ so that no loss and a little loss compare),
// and must not exceed maxDistance.
func nearestLink(ok []*history.Record, l history.Link, user string) ([]*history.Record, string) {
	if l.RTT <= 0 {
		return nil, ""
	}
	pairs := map[[2]string]*linkStats{}
	var keys [][2]string
	for _, r := range ok {
		k := [2]string{hostName(r.Src), hostName(r.Dst)}
		s := pairs[k]
		if s == nil {
			s = &linkStats{src: k[0], dst: k[1]}
			pairs[k] = s
			keys = append(keys, k)
		}
		s.recs = append(s.recs, r)
		if r.Link.RTT > 0 {
			s.rtt = append(s.rtt, r.Link.RTT.Seconds())
		}
		if r.Link.Bandwidth > 0 {
			s.bw = append(s.bw, r.Link.Bandwidth)
		}
		if r.Link.Retransmits >= 0 {
			s.loss = append(s.loss, r.Link.LossRate)
		}
		s.fastest = max(s.fastest, r.Rate())
	}
	var best *linkStats
	bestD := math.Inf(1)
	for _, k := range keys {
		s := pairs[k]
		rtt, bw, loss := s.link()
		if rtt <= 0 {
			continue
		}
		d := math.Abs(math.Log(rtt / l.RTT.Seconds()))
		if bw > 0 && l.Bandwidth > 0 {
			d += math.Abs(math.Log(bw / l.Bandwidth))
		}
		d += 0.5 * math.Abs(math.Log((loss+1e-4)/(l.LossRate+1e-4)))
		if d < bestD {
			best, bestD = s, d
		}
	}
	if best == nil || bestD > maxDistance {
		return nil, ""
	}
	rtt, bw, loss := best.link()
	stats := fmt.Sprintf("RTT %s, bandwidth %s, loss %.2g%%, distance %.2f",
		fmtRTT(time.Duration(rtt*float64(time.Second))), progress.Bits(bw), 100*loss, bestD)
	if user != "" {
		foreign := 0
		for _, r := range best.recs {
			if r.User != user {
				foreign++
			}
		}
		if foreign > 0 {
			// Another user's hosts are theirs to know.
			return best.recs, fmt.Sprintf("%d transfer(s) of other users on a similar link: %s", foreign, stats)
		}
	}
	return best.recs, fmt.Sprintf("%s → %s: %s", best.src, best.dst, stats)
}

// maxDistance is the farthest link (see nearestLink) still called
// similar: about a factor 2.7 in one of RTT or bandwidth.
const maxDistance = 1.0

// fromModel derives parameters from a probe alone.
func fromModel(in Input, p *history.Probe) Advice {
	rtt := p.Link.RTT.Seconds()
	bw := p.Link.Bandwidth / 8 // bytes per second
	bufCap, capName := bufferCap(in, p)
	var b strings.Builder
	if rtt <= 0 || bw <= 0 {
		a := defaults(in)
		a.Basis = Model
		a.Reason = "the probe measured no RTT or bandwidth; defaults"
		return a
	}
	bdp := bw * rtt
	fmt.Fprintf(&b, "bandwidth-delay product %s", progress.Bytes(float64(bdp)))

	// Each stream's window: autotuned up to autotuneFactor × the
	// tcp_rmem (tcp_wmem) maximum, or windowFactor × an explicit buffer,
	// which net.core.rmem_max (wmem_max) caps.
	autoMax, autoName := autotuneMax(in)
	winAuto := autotuneFactor * float64(autoMax)
	winExplicit := math.Inf(1)
	if bufCap > 0 {
		winExplicit = windowFactor * float64(bufCap)
	}
	bestWin := max(winAuto, winExplicit)

	// Streams: enough for the loss (each stream is held to the Mathis
	// bound) and for the windows.
	par := 1
	perLoss := math.Inf(1)
	if p.Link.LossRate > 0 {
		perLoss = mss / rtt * mathisC / math.Sqrt(p.Link.LossRate)
		par = max(par, int(math.Ceil(bw/perLoss)))
		fmt.Fprintf(&b, "; loss %.2g%% holds a stream to %s (Mathis), so %d stream(s) to fill the link",
			100*p.Link.LossRate, progress.Bits(8*perLoss), int(math.Ceil(bw/perLoss)))
	}
	if !math.IsInf(bestWin, 1) {
		if need := int(math.Ceil(bdp / bestWin)); need > par {
			par = need
			fmt.Fprintf(&b, "; a stream's window is at most %s here, so %d stream(s) to cover it", progress.Bytes(float64(bestWin)), need)
		}
	}
	if par > MaxParallel {
		fmt.Fprintf(&b, "; capped at %d streams", MaxParallel)
		par = MaxParallel
	}
	par = max(par, 1)
	perStream := bdp / float64(par)
	buf, capped := 0, ""
	var window float64
	if autoMax > 0 && (winAuto >= 1.25*perStream || winAuto >= winExplicit) {
		// Autotuning covers the BDP (or beats what an explicit buffer
		// may have): leave the buffer to the kernel.
		window = winAuto
		fmt.Fprintf(&b, "; -p %d with autotuned buffers (%s max %s)", par, autoName, progress.Bytes(float64(autoMax)))
		if winAuto < perStream {
			capped = autoName
		}
	} else {
		// The buffer each stream needs: its share of the BDP over this
		// kernel's window per byte of buffer, with a quarter in
		// reserve, rounded up to a power of two.
		buf = max(pow2(int(1.25*perStream/windowFactor)), minBuffer)
		if bufCap > 0 && buf > bufCap {
			buf, capped = bufCap, capName
		}
		window = windowFactor * float64(buf)
		fmt.Fprintf(&b, "; -p %d with -tcp-bs %s", par, progress.Size(int64(buf)))
	}
	rate, limit := bw, "link"
	if w := float64(par) * window / rtt; w < rate {
		rate, limit = w, "window"
	}
	if l := float64(par) * perLoss; l < rate {
		rate, limit = l, "loss"
	}
	fmt.Fprintf(&b, " predicts %s, bounded by the %s", progress.Bits(8*rate), limit)
	a := Advice{
		Params: history.Params{
			Mode:      "E",
			Parallel:  par,
			TCPBuffer: buf,
			BlockSize: blockSize(max(buf, int(min(window, perStream)))),
		},
		PredictedRate: rate,
		Basis:         Model,
		Reason:        b.String(),
		Limit:         limit,
		BufferCap:     capped,
		// The model is within 0.6–1.5× of measured rates (wan.md).
		rateLow:  0.6 * rate,
		rateHigh: min(1.3*rate, max(bw, rate)),
	}
	if par == 1 && p.Link.LossRate == 0 {
		a.Params.Mode = "S"
	}
	return a
}

// autotuneMax returns the autotuning limit of this end's buffer and its
// sysctl: tcp_rmem's maximum when receiving (a download), tcp_wmem's
// when sending (an upload); 0 for a third-party transfer or when unknown.
//
// For a third-party transfer, and when nothing of this kernel is known,
// it assumes Linux's default tcp_rmem maximum (linuxAutotuneMax): an
// explicit buffer disables the kernel's autotuning, which a suggestion
// should not do on a guess.
func autotuneMax(in Input) (int, string) {
	k := in.Kernel
	unknown := k == Kernel{}
	switch {
	case isLocal(in.Dst) && !isLocal(in.Src) && !unknown:
		return k.TCPRmem[2], "net.ipv4.tcp_rmem"
	case isLocal(in.Src) && !isLocal(in.Dst) && !unknown:
		return k.TCPWmem[2], "net.ipv4.tcp_wmem"
	case !isLocal(in.Src) && !isLocal(in.Dst):
		return linuxAutotuneMax, "the servers' net.ipv4.tcp_rmem (Linux's default assumed)"
	}
	return linuxAutotuneMax, "net.ipv4.tcp_rmem (Linux's default assumed)"
}

// linuxAutotuneMax is Linux's default tcp_rmem maximum, 6 MiB.
const linuxAutotuneMax = 6 << 20

// blockSize suggests a MODE E block size for a stream buffer: the
// default (1 MiB) unless the buffer is larger, up to 4 MiB.
func blockSize(buf int) int {
	if buf <= 1<<20 {
		return 0
	}
	return min(pow2(buf), 4<<20)
}

func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// bufferCap returns the largest buffer both ends accept and the name of
// what caps it: the receiving side's net.core.rmem_max for a download,
// the sending side's net.core.wmem_max for an upload, the server's SBUF
// answer (the probe's MaxBuffer). 0 when unknown.
func bufferCap(in Input, p *history.Probe) (int, string) {
	limit, name := 0, ""
	set := func(v int, n string) {
		if v > 0 && (limit == 0 || v < limit) {
			limit, name = v, n
		}
	}
	switch {
	case isLocal(in.Dst) && !isLocal(in.Src): // download: we receive
		set(in.Kernel.RmemMax, "net.core.rmem_max")
	case isLocal(in.Src) && !isLocal(in.Dst): // upload: we send
		set(in.Kernel.WmemMax, "net.core.wmem_max")
	}
	if p != nil {
		set(p.MaxBuffer, "the server's SBUF limit")
	}
	return limit, name
}

// capBuffer keeps a suggested buffer within what the ends accept, and
// says so.
func capBuffer(a *Advice, in Input, p *history.Probe) {
	c, name := bufferCap(in, p)
	if c > 0 && a.Params.TCPBuffer > c {
		a.Reason += fmt.Sprintf("; %s caps -tcp-bs %s at %s", name, progress.Bytes(float64(a.Params.TCPBuffer)), progress.Bytes(float64(c)))
		a.Params.TCPBuffer = c
		a.BufferCap = name
	}
	switch {
	case strings.HasPrefix(a.BufferCap, "net.core."):
		a.Reason += fmt.Sprintf(" (this kernel's %s limits the buffer; raise it with sysctl -w %s=N for more per stream)", a.BufferCap, a.BufferCap)
	case strings.HasPrefix(a.BufferCap, "net.ipv4."):
		a.Reason += fmt.Sprintf(" (this kernel's %s maximum limits the autotuned buffer; raise its third value for more per stream)", a.BufferCap)
	}
}

// many sets concurrency and pipelining for many files.
func many(a *Advice, in Input, files int, p *history.Probe) {
	if files <= 1 || a.Params.Concurrency > 1 {
		return
	}
	small := in.Size > 0 && in.Size < smallFile
	cc := min(files, 4)
	if small {
		cc = min(files, MaxConcurrency)
	}
	a.Params.Concurrency = cc
	a.Params.Pipeline = small || a.Params.Pipeline
	a.Reason += fmt.Sprintf("; %d files: -cc %d", files, cc)
	if small {
		a.Reason += " -pp (small files: per-file round trips dominate)"
		// Fewer streams per file when several files share the link.
		if a.Params.Parallel > 2 {
			p := max(2, a.Params.Parallel/cc)
			a.Reason += fmt.Sprintf(", -p %d per file instead of %d as %d files share the link", p, a.Params.Parallel, cc)
			a.Params.Parallel = p
		}
	}
}

// eta fills the ETA fields: the bytes over the rate, plus a round trip
// or two per file shared among the concurrent files.
func eta(a *Advice, in Input, files int, p *history.Probe) {
	if in.Size <= 0 || a.PredictedRate <= 0 {
		return
	}
	lo, hi := a.rateLow, a.rateHigh
	if lo <= 0 || lo > a.PredictedRate {
		lo = a.PredictedRate
	}
	if hi < a.PredictedRate {
		hi = a.PredictedRate
	}
	total := float64(in.Size) * float64(files)
	var perFile float64
	if p != nil && p.Link.RTT > 0 {
		rtts := 4.0 // open, size, transfer, close
		if a.Params.Pipeline {
			rtts = 1
		}
		perFile = rtts * p.Link.RTT.Seconds() * float64(files) / float64(max(a.Params.Concurrency, 1))
	}
	d := func(rate float64) time.Duration {
		return time.Duration((total/rate + perFile) * float64(time.Second))
	}
	a.ETA, a.ETALow, a.ETAHigh = d(a.PredictedRate), d(hi), d(lo)
}

// defaults is the advice when nothing is known.
func defaults(in Input) Advice {
	return Advice{
		Params: history.Params{Mode: "E", Parallel: DefaultParallel},
		Basis:  Default,
		Reason: fmt.Sprintf("no past transfers and no probe of this link: defaults (MODE E, -p %d, autotuned buffers); run ferry probe, or ferry advise -calibrate, to learn it", DefaultParallel),
	}
}
