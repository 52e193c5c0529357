package client

// Third-party transfers (protocol.md §14): the client steers two servers
// and the bytes flow directly between them. The receiver is always
// passive and the sender active (§3.3), as globus-url-copy does it:
//
//	A: [MODE E]  [SIZE src]  [OPTS RETR Parallelism=N,N,N;]
//	B: [MODE E]  PASV (SPAS)  ALLO n  [REST ranges]  STOR dst   (no wait)
//	A: PORT (SPOR)  [REST ranges]  RETR src
//	A: 150 … 226      B: 150 [112, 111 markers] 226
//
// Done only when both 226 replies have arrived. SIZE is left out when
// the caller knows the size. The first two lines go to both servers at
// once, each line's commands back to back (protocol.md §1.1), and so do
// ALLO and STOR, PORT and REST: about three round trips before the data
// instead of eight.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// ThirdPartyOptions modifies ThirdParty. The zero value (or nil) copies
// the whole file in stream mode.
type ThirdPartyOptions struct {
	// Offset and Length, when Length is positive, copy only Length bytes
	// from Offset on, to the same offsets of the destination: ERET P on
	// the source, ESTO A on the destination (protocol.md §8.1, §8.2).
	// An Offset without a Length copies to the end of the source.
	Offset, Length int64

	// Size is the size of the source file when KnownSize is set (a
	// listing told it): the source is then not asked for it (SIZE), which
	// saves a round trip. No ALLO is sent then: the file may have grown
	// since, and an ALLO too small makes a Ferry destination refuse it.
	// For Offset/Length copies it bounds the ERET.
	Size      int64
	KnownSize bool

	// Parallel, when above 1, puts both servers in MODE E and asks the
	// source for that many data connections (OPTS RETR Parallelism).
	Parallel int

	// ModeE uses MODE E even with one data connection.
	ModeE bool

	// Striped asks the destination for SPAS instead of PASV; the source
	// gets SPOR when the destination answers with several addresses.
	Striped bool

	// StripeBlockSize, when positive, asks the source for the blocked
	// stripe layout with this block (OPTS RETR StripeLayout=Blocked;
	// BlockSize=N;), like globus-url-copy -sbs. MODE E only.
	StripeBlockSize int64

	// TCPBuffer, when positive, is sent as SITE RETRBUFSIZE to the source
	// and SITE STORBUFSIZE to the destination (refusals are ignored).
	TCPBuffer int

	// Restart lists the byte ranges (file offsets) already at the
	// destination: both servers get REST of them (the destination before
	// STOR, the source before RETR), as globus-url-copy -restart does.
	Restart RangeSet

	// Acknowledged, when not nil, is called with every range (file
	// offsets, Restart included) the destination has confirmed with 111
	// range markers, each time one arrives. MODE E only.
	Acknowledged func(RangeSet)

	// MarkerInterval, when at least a second, asks the destination for
	// 111 range markers at that period (TREV RESTART; refusal ignored).
	MarkerInterval time.Duration

	// PartOf, when positive, makes the Offset/Length window one part of
	// a copy in parts of a file of PartOf bytes (Ferry's PART extension,
	// docs/extensions.md): the destination gets ALLO PartOf, REST of
	// Restart (file offsets), PART and ESTO A Offset, and keeps the file
	// aside until the parts cover it. It needs MODE E, a Length and a
	// destination whose FEAT lists PART.
	PartOf int64

	// Progress, when not nil, sees the destination's 112 performance
	// markers (one count per stripe; MODE E only) about every
	// ProgressInterval, and once at the end.
	Progress func(Progress)

	// ProgressInterval is the period of Progress; zero means
	// DefaultProgressInterval.
	ProgressInterval time.Duration

	// SrcModule and DstModule, when not empty, name processing module
	// chains (as RetrieveOptions.Module and StoreOptions.Module): the
	// source gets ERET SrcModule="SrcModuleParams" PATH, the destination
	// ESTO DstModule="DstModuleParams" PATH. They take no Offset, Length,
	// PartOf or Restart.
	SrcModule, SrcModuleParams string
	DstModule, DstModuleParams string

	// begun, when not nil, is called when the destination accepted the
	// transfer (its 125 or 150): from then on its file is this copy's.
	begun func()
}

// modeE reports whether the options ask for MODE E.
func (o *ThirdPartyOptions) modeE() bool { return o.Parallel > 1 || o.ModeE }

// ThirdParty copies srcPath on the server of src to dstPath on the server
// of dst, directly between the two servers: dst listens (PASV or SPAS),
// src connects (PORT or SPOR). It returns the number of bytes moved: the
// size of what was missing at the destination when the source's size is
// known, else what the destination's performance markers counted.
//
// A negative reply from either server is a *ReplyError. When one side
// fails while the other is still busy, the other one's transfer is
// aborted (ABOR) and its Conn closed; a Conn whose exchange broke is
// closed too. With GSI both servers need a delegated credential for
// data channel authentication (DCAU A): each presents its own.
func ThirdParty(ctx context.Context, src *Conn, srcPath string, dst *Conn, dstPath string, opts *ThirdPartyOptions) (int64, error) {
	var o ThirdPartyOptions
	if opts != nil {
		o = *opts
	}
	if o.Offset < 0 || o.Length < 0 {
		return 0, fmt.Errorf("client: third party: negative offset or length")
	}
	if err := checkThirdPartyModules(&o); err != nil {
		return 0, err
	}
	if src == dst {
		return 0, errors.New("client: third party: source and destination are the same Conn")
	}
	if err := checkThirdPartyFTPS(src, dst); err != nil {
		return 0, err
	}
	for _, c := range []*Conn{src, dst} {
		if c.err != nil {
			return 0, c.err
		}
	}
	for _, p := range []string{srcPath, dstPath} {
		if err := checkLine(p); err != nil {
			return 0, err
		}
	}
	if ctx.Err() != nil {
		return 0, fmt.Errorf("client: third party: %w", context.Cause(ctx))
	}
	restore, err := plainPeerDCAU(ctx, src, dst)
	if err != nil {
		return 0, err
	}
	if restore != nil {
		defer restore()
	}
	t := &thirdParty{ctx: ctx, src: src, dst: dst, o: &o, srcPath: srcPath, dstPath: dstPath}
	return t.run()
}

// thirdParty is one third-party transfer in progress.
type thirdParty struct {
	ctx              context.Context
	src, dst         *Conn
	o                *ThirdPartyOptions
	srcPath, dstPath string

	base int64 // file offset of transfer offset 0 (partial copies)

	mu      sync.Mutex
	acked   RangeSet // guarded by mu; file offsets
	stripes []int64  // guarded by mu; 112 bytes per stripe
}

func (t *thirdParty) run() (int64, error) {
	o := t.o
	_, stopSrc := watchAll(t.ctx, t.src.nc)
	_, stopDst := watchAll(t.ctx, t.dst.nc)
	t.acked = o.Restart.Clone()

	var m *meter
	if o.Progress != nil {
		m = startTicker(o.ProgressInterval, func() { o.Progress(t.progress()) })
	}
	want, dstFin, srcFin, err := t.steps()
	if m != nil {
		m.stop()
	}
	err = t.finish(stopSrc, stopDst, dstFin, srcFin, err)
	p := t.progress()
	switch {
	case err == nil && want >= 0:
		return want, nil
	case err == nil:
		return p.Bytes, nil
	}
	t.mu.Lock()
	moved := t.acked.Total() - o.Restart.Total()
	t.mu.Unlock()
	return max(p.Bytes, moved, 0), err
}

// progress is the destination's 112 markers so far.
func (t *thirdParty) progress() Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := Progress{Streams: append([]int64(nil), t.stripes...)}
	for _, n := range t.stripes {
		p.Bytes += n
	}
	return p
}

// leg is one server's side of the transfer once its transfer command is
// out: its final reply arrives on fin.
type leg struct {
	c    *Conn
	fin  chan final
	got  bool
	last final
}

// startLeg reads the replies of c's transfer command t up to the final
// one in a goroutine; prelim sees the preliminary ones. The replies of the
// skip commands sent before t (whose answer does not matter) are read
// first.
func startLeg(ctx context.Context, c *Conn, skip []ticket, t ticket, prelim func(Reply)) *leg {
	l := &leg{c: c, fin: make(chan final, 1)}
	go func() {
		for _, s := range skip {
			if r, err := c.rs.next(ctx, s); err != nil {
				l.fin <- final{r, err}
				return
			}
		}
		r, err := c.rs.final(ctx, t, prelim)
		l.fin <- final{r, err}
	}()
	return l
}

// wait waits for the final reply; a nil leg has none.
func (l *leg) wait() final {
	if l == nil {
		return final{}
	}
	if !l.got {
		l.last, l.got = <-l.fin, true
	}
	return l.last
}

// ok reports whether the final reply arrived and is positive.
func (l *leg) ok() bool { return l != nil && l.got && l.last.err == nil && l.last.r.Class() == 2 }

// failed reports whether the final reply arrived and is not positive.
func (l *leg) failed() bool { return l != nil && l.got && !l.ok() }

// steps runs the command sequence and waits for the final replies. want
// is the number of bytes the transfer should move (-1: unknown). The legs
// are nil for a server whose transfer command was not accepted.
func (t *thirdParty) steps() (want int64, dstLeg, srcLeg *leg, err error) {
	modeE := t.o.modeE()
	t.src.dropCache()
	t.dst.dropCache()

	// The set-up commands that need no answer from the other server go
	// out back to back on each (protocol.md §1.1), both servers at once:
	// A: [MODE E] [SIZE] [SITE RETRBUFSIZE] [OPTS RETR]
	// B: [MODE E] [STOR-DRAIN=OFF] [SITE STORBUFSIZE] [TREV] PASV|SPAS
	size := int64(-1)
	if t.o.KnownSize && t.o.Size >= 0 {
		size = t.o.Size
	}
	var addrs []netip.AddrPort
	srcSteps := t.sourcePrelude(modeE, &size)
	dstSteps := t.destinationPrelude(modeE, &addrs)
	var dstErr error
	var wg sync.WaitGroup
	wg.Go(func() { dstErr = t.dst.burst(t.ctx, dstSteps) })
	srcErr := t.src.burst(t.ctx, srcSteps)
	wg.Wait()
	if srcErr != nil {
		return -1, nil, nil, srcErr
	}

	w, err := t.window(size)
	if err != nil {
		return -1, nil, nil, err
	}
	if dstErr != nil {
		return w.want, nil, nil, dstErr
	}
	dstLeg, err = t.startStore(w)
	if err != nil {
		return w.want, nil, nil, err
	}

	// A: soft commands, [OPTS RETR], PORT or SPOR, [REST], RETR.
	err = t.srcSetup(addrs, w.rest, w.retrCmd)
	if err != nil {
		return w.want, dstLeg, nil, err
	}
	srcLeg = startLeg(t.ctx, t.src, nil, t.src.rs.last(), nil)
	waitFinals(dstLeg, srcLeg)
	return w.want, dstLeg, srcLeg, nil
}

// sourcePrelude is the source's set-up burst: [MODE E] [SIZE]
// [SITE RETRBUFSIZE] [OPTS RETR]. The SIZE reply, when there is one,
// sets *size.
func (t *thirdParty) sourcePrelude(modeE bool, size *int64) []step {
	o, src := t.o, t.src
	var steps []step
	steps = append(steps, src.modeStep(modeE)...)
	if *size < 0 && o.SrcModule == "" {
		steps = append(steps, step{line: "SIZE " + t.srcPath, check: func(r Reply) error {
			if r.Code == 213 {
				if n, perr := strconv.ParseInt(strings.TrimSpace(r.Text()), 10, 64); perr == nil && n >= 0 {
					*size = n
				}
			}
			return nil
		}})
	}
	steps = append(steps, src.softSteps(bufferCommand("SITE RETRBUFSIZE", o.TCPBuffer))...)
	if modeE {
		n := max(o.Parallel, 1)
		opts := fmt.Sprintf("Parallelism=%d,%d,%d;", n, n, n)
		if o.StripeBlockSize > 0 {
			opts = fmt.Sprintf("StripeLayout=Blocked;BlockSize=%d;", o.StripeBlockSize) + opts
		}
		steps = append(steps, step{line: "OPTS RETR " + opts, check: wantClass(2)})
	}
	return steps
}

// destinationPrelude is the destination's set-up burst: [MODE E]
// [STOR-DRAIN=OFF] [SITE STORBUFSIZE] [TREV] PASV|SPAS. The passive
// reply sets *addrs.
func (t *thirdParty) destinationPrelude(modeE bool, addrs *[]netip.AddrPort) []step {
	o, dst := t.o, t.dst
	var steps []step
	steps = append(steps, dst.modeStep(modeE)...)
	if dst.drainOn {
		// With STOR-DRAIN on, a refused STOR would wait for the
		// source's data, which comes only after RETR: the refusal of
		// both would leave the destination waiting.
		steps = append(steps, step{line: "OPTS PIPE STOR-DRAIN=OFF", check: func(r Reply) error {
			if r.Class() != 2 {
				return &ReplyError{Reply: r}
			}
			dst.drainOn = false
			return nil
		}})
	}
	soft := bufferCommand("SITE STORBUFSIZE", o.TCPBuffer)
	if s := o.MarkerInterval / time.Second; modeE && s >= 1 {
		soft = append(soft, fmt.Sprintf("TREV RESTART %d", s))
	}
	steps = append(steps, dst.softSteps(soft)...)
	steps = append(steps, step{line: passiveLine(o.Striped), check: func(r Reply) (err error) {
		*addrs, err = dst.parsePassive(o.Striped, r)
		if err != nil {
			return err
		}
		return dst.checkRelay(*addrs)
	}})
	return steps
}

// window is the part of the file that moves and the transfer commands
// that move it.
type window struct {
	storCmd, retrCmd string
	length           int64    // bytes from the offset on; -1: unknown
	partial          bool     // Offset/Length copy: ESTO and ERET
	rest             RangeSet // transfer offsets already at the destination
	want             int64    // bytes still to move; -1: unknown
}

// window works out what moves, given the source's size (-1: unknown). It
// sets t.base for a partial copy.
func (t *thirdParty) window(size int64) (window, error) {
	o := t.o
	w := window{storCmd: "STOR " + t.dstPath, retrCmd: "RETR " + t.srcPath, length: -1, want: -1}
	w.partial = o.Length > 0 || o.Offset > 0
	if w.partial {
		w.length = o.Length
		if w.length <= 0 && size >= 0 {
			w.length = max(size-o.Offset, 0)
		}
		if w.length < 0 {
			return w, fmt.Errorf("client: third party: SIZE %s refused; give a length", t.srcPath)
		}
		if size >= 0 {
			w.length = min(w.length, max(size-o.Offset, 0))
		}
		t.base = o.Offset
		if o.PartOf > 0 {
			switch {
			case !t.dst.hasFeature("PART"):
				return w, fmt.Errorf("client: third party: the destination does not take copies in parts (no PART in FEAT)")
			case !o.modeE() || o.Length <= 0 || o.Offset+o.Length > o.PartOf:
				return w, fmt.Errorf("client: third party: a part needs MODE E and a length within the file")
			}
		}
		w.storCmd = fmt.Sprintf("ESTO A %d %s", o.Offset, t.dstPath)
		w.retrCmd = fmt.Sprintf("ERET P %d %d %s", o.Offset, w.length, t.srcPath)
	} else if size >= 0 && !o.KnownSize && o.SrcModule == "" {
		// A size the caller planned earlier may be stale (a file still
		// being written): announced with ALLO, it would make a Ferry
		// destination refuse the grown file. Only a fresh SIZE is sent.
		// A module chain's output has no size before it is made.
		w.length = size
	}
	if o.SrcModule != "" {
		w.retrCmd, _ = moduleCommand("ERET", o.SrcModule, o.SrcModuleParams, t.srcPath)
	}
	if o.DstModule != "" {
		w.storCmd, _ = moduleCommand("ESTO", o.DstModule, o.DstModuleParams, t.dstPath)
	}
	if w.length >= 0 {
		span := Range{Start: t.base, End: t.base + w.length}
		w.rest = shiftRanges(o.Restart, -t.base, Range{Start: 0, End: w.length})
		w.want = 0
		for _, g := range o.Restart.Missing(span) {
			w.want += g.Len()
		}
	} else {
		w.rest = o.Restart.Clone()
	}
	if !o.modeE() && w.rest.Len() > 0 {
		// Stream mode can only skip a prefix (protocol.md §8.3).
		p := prefixFrom(w.rest, 0)
		w.rest = RangeSet{}
		if p > 0 {
			w.rest.Add(Range{Start: 0, End: p})
		}
	}
	return w, nil
}

// startStore sends the destination's [ALLO], [REST], STOR and starts its
// leg without waiting for the 150, which comes once the source connects.
func (t *thirdParty) startStore(w window) (*leg, error) {
	dst := t.dst
	if t.o.PartOf > 0 {
		// A part (see ThirdPartyOptions.PartOf): the whole size, what
		// the destination holds, the part; all accepted before ESTO.
		steps := []step{{line: fmt.Sprintf("ALLO %d", t.o.PartOf), check: wantClass(2)}}
		if t.o.Restart.Len() > 0 {
			steps = append(steps, restStep(t.o.Restart))
		}
		steps = append(steps, step{line: fmt.Sprintf("PART %d-%d", t.base, t.base+w.length), check: accepted})
		if err := dst.burst(t.ctx, steps); err != nil {
			return nil, err
		}
		stor, err := dst.request(t.ctx, w.storCmd)
		if err != nil {
			return nil, err
		}
		return startLeg(t.ctx, dst, nil, stor, t.markers), nil
	}
	// ALLO is advice (a server may not know it), so it goes with the
	// STOR and its reply is read by the leg; a REST must be accepted
	// before the STOR, which would truncate without it.
	var allo []ticket
	if w.length >= 0 {
		if !w.partial && w.rest.Len() > 0 {
			if err := dst.burst(t.ctx, []step{{line: fmt.Sprintf("ALLO %d", w.length)}}); err != nil {
				return nil, err
			}
		} else {
			a, err := dst.request(t.ctx, fmt.Sprintf("ALLO %d", w.length))
			if err != nil {
				return nil, err
			}
			allo = append(allo, a)
		}
	}
	if !w.partial {
		// ESTO never truncates; STOR does unless REST says what is there.
		if err := dst.restCommand(t.ctx, w.rest); err != nil {
			return nil, err
		}
	}
	stor, err := dst.request(t.ctx, w.storCmd)
	if err != nil {
		return nil, err
	}
	return startLeg(t.ctx, dst, allo, stor, t.markers), nil
}

// waitFinals waits for both legs' final replies; the first failure stops
// waiting.
func waitFinals(dstLeg, srcLeg *leg) {
	for !dstLeg.got || !srcLeg.got {
		select {
		case f := <-dstLeg.fin:
			dstLeg.last, dstLeg.got = f, true
			if !dstLeg.ok() {
				return
			}
		case f := <-srcLeg.fin:
			srcLeg.last, srcLeg.got = f, true
			if !srcLeg.ok() {
				return
			}
		}
	}
}

// srcSetup sends the source's commands up to the transfer command's
// preliminary reply.
func (t *thirdParty) srcSetup(addrs []netip.AddrPort, rest RangeSet, retrCmd string) error {
	src := t.src
	line, err := portCommand(addrs)
	if err != nil {
		return err
	}
	// PORT and REST together; RETR only once both are accepted, lest the
	// source send to a data channel it had before.
	steps := []step{{line: line, check: wantClass(2)}}
	if rest.Len() > 0 {
		steps = append(steps, restStep(rest))
	}
	if err := src.burst(t.ctx, steps); err != nil {
		return err
	}
	return src.exchange2(t.ctx, retrCmd, 1)
}

// step is one command of a burst; check, when not nil, judges its reply.
type step struct {
	line  string
	check func(Reply) error
}

// wantClass is a step check for a reply of class want.
func wantClass(want int) func(Reply) error {
	return func(r Reply) error {
		if r.Class() != want {
			return &ReplyError{Reply: r}
		}
		return nil
	}
}

// burst sends the steps' commands back to back, then reads their replies
// in order: the servers queue pipelined commands (protocol.md §1.1), so
// this costs one round trip instead of one per command. Every reply is
// read, so the Conn stays in step; the first failure is returned. Only
// commands that may be sent whatever the earlier ones' answer go in one.
func (c *Conn) burst(ctx context.Context, steps []step) error {
	lines := make([]string, len(steps))
	for i, s := range steps {
		lines[i] = s.line
	}
	rs, err := c.exchangeAll(ctx, lines)
	if err != nil {
		return err
	}
	for i, s := range steps {
		if s.check != nil {
			if err := s.check(rs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// modeStep is setMode as a step (none when the server is in that mode).
func (c *Conn) modeStep(e bool) []step {
	if c.modeE == e {
		return nil
	}
	c.tp = nil
	m := "MODE S"
	if e {
		m = "MODE E"
	}
	return []step{{line: m, check: func(r Reply) error {
		if r.Class() != 2 {
			return &ReplyError{Reply: r}
		}
		c.modeE = e
		return nil
	}}}
}

// softSteps is softCommands as steps.
func (c *Conn) softSteps(lines []string) []step {
	steps := make([]step, len(lines))
	for i, l := range lines {
		steps[i] = step{line: l, check: func(r Reply) error {
			if r.Class() != 2 {
				c.log.Debug("command refused; going on", "cmd", verb(l), "code", r.Code)
			}
			return nil
		}}
	}
	return steps
}

// portCommand is PORT (EPRT for IPv6) for one address, SPOR for several.
func portCommand(addrs []netip.AddrPort) (string, error) {
	if len(addrs) == 1 {
		if !addrs[0].Addr().Is4() {
			return "EPRT " + wire.FormatEPRT(addrs[0]), nil
		}
		arg, err := wire.FormatPORT(addrs[0])
		if err != nil {
			return "", fmt.Errorf("client: %w", err)
		}
		return "PORT " + arg, nil
	}
	parts := make([]string, len(addrs))
	for i, ap := range addrs {
		if ap.Addr().Is4() {
			arg, err := wire.FormatPORT(ap)
			if err != nil {
				return "", fmt.Errorf("client: %w", err)
			}
			parts[i] = arg
		} else {
			parts[i] = wire.FormatEPRT(ap)
		}
	}
	return "SPOR " + strings.Join(parts, " "), nil
}

// passiveAddrs asks the server for the address(es) another server is to
// connect to: PASV, or SPAS when striped. A 0.0.0.0 address is replaced
// by the control connection's peer.
func (c *Conn) passiveAddrs(ctx context.Context, striped bool) ([]netip.AddrPort, error) {
	line := passiveLine(striped)
	r, err := c.exchange(ctx, line)
	if err != nil {
		return nil, err
	}
	return c.parsePassive(striped, r)
}

// checkRelay asks c's DataAddrPolicy about each address c's passive
// reply named before it goes to the other server in PORT, EPRT or SPOR:
// the other server would connect there on this client's behalf (an FTP
// bounce), so the policy of the connection the address came from
// applies, as if this client dialled it. Nil policy allows every
// address.
func (c *Conn) checkRelay(addrs []netip.AddrPort) error {
	if c.dataPol == nil {
		return nil
	}
	for _, ap := range addrs {
		if err := c.dataPol(ap); err != nil {
			return fmt.Errorf("client: data address %v from the passive reply refused, not sent to the other server: %w", ap, err)
		}
	}
	return nil
}

// passiveLine is the command passiveAddrs sends.
func passiveLine(striped bool) string {
	if striped {
		return "SPAS"
	}
	return "PASV"
}

// parsePassive reads the reply to passiveLine.
func (c *Conn) parsePassive(striped bool, r Reply) ([]netip.AddrPort, error) {
	peer := c.controlPeer()
	fix := func(ap netip.AddrPort) netip.AddrPort {
		if ap.Addr().IsUnspecified() && peer.IsValid() {
			return netip.AddrPortFrom(peer, ap.Port())
		}
		return ap
	}
	if !striped {
		if r.Code != 227 {
			return nil, &ReplyError{Reply: r}
		}
		ap, err := wire.ParsePASVReply(r.Text())
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		return []netip.AddrPort{fix(ap)}, nil
	}
	if r.Code != 229 {
		return nil, &ReplyError{Reply: r}
	}
	addrs, err := parseSPAS(r)
	if err != nil {
		return nil, err
	}
	for i := range addrs {
		addrs[i] = fix(addrs[i])
	}
	return addrs, nil
}

// parseSPAS reads the addresses of a striped passive reply: the lines
// between the first and the last, each a host-port (protocol.md §3.1).
func parseSPAS(r Reply) ([]netip.AddrPort, error) {
	if len(r.Lines) < 3 {
		return nil, fmt.Errorf("client: SPAS reply without addresses: %q", r.Text())
	}
	var out []netip.AddrPort
	for _, l := range r.Lines[1 : len(r.Lines)-1] {
		ap, err := wire.ParseHostPort(strings.TrimSpace(l))
		if err != nil {
			return nil, fmt.Errorf("client: SPAS reply: %w", err)
		}
		out = append(out, ap)
	}
	return out, nil
}

// markers handles the destination's preliminary replies: 111 range
// markers (transfer coordinates, shifted to file offsets) and 112
// performance markers.
func (t *thirdParty) markers(r Reply) {
	switch r.Code {
	case 125, 150:
		if t.o.begun != nil {
			t.o.begun()
		}
	case 111:
		rs, err := parseRangeMarker(r)
		if err != nil {
			t.dst.log.Debug("bad range marker", "text", r.Text(), "err", err)
			return
		}
		t.mu.Lock()
		for _, x := range rs.Ranges() {
			t.acked.Add(Range{Start: x.Start + t.base, End: x.End + t.base})
		}
		all := t.acked.Clone()
		t.mu.Unlock()
		if t.o.Acknowledged != nil {
			t.o.Acknowledged(all)
		}
	case 112:
		pm, err := wire.ParsePerfMarker(r)
		if err != nil || pm.Stripe > 1024 || pm.Stripes > 1024 {
			t.dst.log.Debug("bad performance marker", "text", r.Text(), "err", err)
			return
		}
		t.mu.Lock()
		if n := max(pm.Stripes, pm.Stripe+1); len(t.stripes) < n {
			t.stripes = append(t.stripes, make([]int64, n-len(t.stripes))...)
		}
		t.stripes[pm.Stripe] = pm.Bytes
		t.mu.Unlock()
	}
}

// finish turns the outcome into the result and cleans up: a side still
// busy when the other failed is aborted (ABOR) and closed, and so is a
// side whose exchange broke.
func (t *thirdParty) finish(stopSrc, stopDst func() bool, dstLeg, srcLeg *leg, err error) error {
	aborted := map[*Conn]bool{}
	if err != nil || dstLeg.failed() || srcLeg.failed() {
		for _, l := range []*leg{dstLeg, srcLeg} {
			if l != nil && !l.got {
				_ = l.c.nc.SetDeadline(time.Now().Add(abortTimeout))
				_, _ = l.c.request(context.Background(), "ABOR")
				aborted[l.c] = true
			}
		}
	}
	dfin, sfin := dstLeg.wait(), srcLeg.wait()
	firedSrc, firedDst := stopSrc(), stopDst()

	var be *brokenError
	if errors.As(err, &be) {
		// A setup exchange broke, on the source or (before its leg
		// started) on the destination: neither is known to be in step.
		aborted[t.src] = true
		if dstLeg == nil {
			aborted[t.dst] = true
		}
	}
	settle := func(c *Conn, l *leg, fired bool) {
		switch {
		case aborted[c], l != nil && l.last.err != nil:
			c.close()
		case fired:
			_ = c.nc.SetDeadline(time.Time{})
		}
	}
	settle(t.src, srcLeg, firedSrc)
	settle(t.dst, dstLeg, firedDst)

	ctx := t.ctx
	if ctx.Err() != nil && (err != nil || !dstLeg.ok() || !srcLeg.ok()) {
		return fmt.Errorf("client: third party: %w", context.Cause(ctx))
	}
	if err != nil {
		if be != nil {
			return be.err
		}
		return err
	}
	describe := func(who string, f final) error {
		if f.err != nil {
			return fmt.Errorf("client: third party: %s: %w", who, causeOf(f.err))
		}
		return &ReplyError{Reply: f.r}
	}
	// The cause before its consequence: a side we aborted failed because
	// of the other.
	switch {
	case !dstLeg.ok() && !aborted[t.dst]:
		return describe("destination", dfin)
	case !srcLeg.ok() && !aborted[t.src]:
		return describe("source", sfin)
	case !dstLeg.ok():
		return describe("destination", dfin)
	case !srcLeg.ok():
		return describe("source", sfin)
	}
	return nil
}
