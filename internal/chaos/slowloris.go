package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Slowloris settings: the server's limits (ferry serve flags) and the
// attack.
const (
	lorisPerSource  = 40  // -max-sessions-per-source
	lorisMaxAll     = 300 // -max-sessions
	lorisStall      = 5 * time.Second
	lorisIdle       = 10 * time.Second
	lorisConns      = 60 // slow control connections from 127.0.0.2
	lorisHalfOpen   = 5  // stalled uploads from 127.0.0.3
	lorisNoRead     = 5  // downloads nobody reads, from 127.0.0.4
	lorisProbeEvery = 100 * time.Millisecond
	lorisProbeBound = 5 * time.Second // a probe slower than this hangs
	lorisSlow       = 2 * time.Second // a probe slower than this fails
)

// slowloris attacks a server for Config.Attack with slow control
// connections (a byte of a command every 500 ms, never a line end),
// half-open data connections (STOR, a data connection, no byte) and
// downloads whose reader stops reading, while a good client from
// 127.0.0.1 logs in and sends NOOP every 100 ms and copies a file with
// ferry cp. The server's limits are the ferry serve flags
// -max-sessions-per-source, -max-sessions, -stall-timeout and
// -idle-timeout; the login timeout (server.Config.LoginTimeout, 60 s)
// has no flag.
func (h *harness) slowloris(ctx context.Context) (Result, error) {
	var r Result
	s, err := h.startSite("slowloris", "", 0,
		"-max-sessions-per-source", fmt.Sprint(lorisPerSource), "-max-sessions", fmt.Sprint(lorisMaxAll),
		"-stall-timeout", lorisStall.String(), "-idle-timeout", lorisIdle.String())
	if err != nil {
		return r, err
	}
	if _, err := writeRandom(filepath.Join(s.root, "big.bin"), 64<<20, 7); err != nil {
		return r, err
	}
	want, err := writeRandom(filepath.Join(s.root, "small.bin"), 4<<20, 8)
	if err != nil {
		return r, err
	}
	actx, stop := context.WithTimeout(ctx, h.cfg.Attack)
	defer stop()
	var wg sync.WaitGroup
	var slow lorisSlowConns
	for i := range lorisConns {
		wg.Go(func() { slow.run(actx, s.serve.addr, i) })
	}
	// Half-open uploads and downloads nobody reads: the stall timeout
	// must end them with a reply on the control connection.
	var st lorisStalled
	for i := range lorisHalfOpen {
		wg.Go(func() { st.attack(actx, s.serve.addr, "127.0.0.3", fmt.Sprintf("STOR /halfopen-%d", i)) })
	}
	for range lorisNoRead {
		wg.Go(func() { st.attack(actx, s.serve.addr, "127.0.0.4", "RETR /big.bin") })
	}

	// The good client.
	cpDone := make(chan runResult, 1)
	go func() {
		time.Sleep(time.Second)
		dst := filepath.Join(h.scratch, "slowloris-small.bin")
		cpDone <- runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, nil, s.dumpAll, "cp", "-p", "4", s.url("small.bin"), dst)
	}()
	lat, probeErrs := lorisProbe(ctx, actx, s.serve.addr, &r)
	cp := <-cpDone
	wg.Wait()
	h.lorisCheckCopy(&r, cp, want)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		r.notef("good client: %d logins+NOOP during %v, median %v, max %v; %d slow control connections held, %d refused (-max-sessions-per-source %d)",
			len(lat), h.cfg.Attack, lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond), slow.up.Load(), slow.refused.Load(), lorisPerSource)
	}
	if slow.refused.Load() == 0 {
		r.Failed++
		r.notef("-max-sessions-per-source %d refused none of %d slow connections", lorisPerSource, lorisConns)
	}
	h.lorisCheckStalled(&r, st.ended)
	for i, e := range probeErrs {
		if i == 5 {
			break
		}
		r.notef("good client: %s", e)
	}
	// Nothing the attack left may keep the server from serving.
	if err := s.waitUp(ctx, 10*time.Second); err != nil {
		r.Failed++
		r.notef("after the attack: %v", err)
	}
	os.RemoveAll(filepath.Join(h.scratch, "slowloris-small.bin"))
	return r, nil
}

// lorisSlowConns counts the slow control connections refused and held.
type lorisSlowConns struct{ refused, up atomic.Int64 }

// run holds slow control connection i to addr until ctx ends.
func (sc *lorisSlowConns) run(ctx context.Context, addr string, i int) {
	conn, err := dialFrom(ctx, "127.0.0.2", addr, 2*time.Second)
	if err != nil {
		sc.refused.Add(1)
		return
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 512)
	n, _ := conn.Read(buf)
	if strings.HasPrefix(string(buf[:n]), "421") || n == 0 {
		sc.refused.Add(1)
		return
	}
	sc.up.Add(1)
	msg := "USER anonymous-" + fmt.Sprint(i)
	for k := 0; ctx.Err() == nil; k++ {
		if _, err := conn.Write([]byte{msg[k%len(msg)]}); err != nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// lorisStalled collects how each stalled transfer ended.
type lorisStalled struct {
	mu    sync.Mutex
	ended []string // guarded by mu
}

func (st *lorisStalled) add(e string) {
	st.mu.Lock()
	st.ended = append(st.ended, e)
	st.mu.Unlock()
}

// attack logs in to addr from from, opens a data connection, sends
// command and then neither sends nor reads a byte.
func (st *lorisStalled) attack(ctx context.Context, addr, from, command string) {
	c, err := login(ctx, from, addr, 5*time.Second)
	if err != nil {
		st.add(fmt.Sprintf("%s login: %v", command, err))
		return
	}
	defer c.close()
	daddr, err := c.pasv(5 * time.Second)
	if err != nil {
		return
	}
	data, err := dialFrom(ctx, from, daddr, 5*time.Second)
	if err != nil {
		return
	}
	defer data.Close()
	if tc, ok := data.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	start := time.Now()
	code, _, err := c.cmd(5*time.Second, command)
	if err != nil || code != 150 && code != 125 {
		st.add(fmt.Sprintf("%s: %d %v", command, code, err))
		return
	}
	code, msg, err := c.read(lorisStall + 10*time.Second)
	if i := strings.Index(msg, ";"); i > 0 {
		msg = msg[:i]
	}
	st.add(fmt.Sprintf("%s ended after %v: %d %s %v", strings.Fields(command)[0], time.Since(start).Round(100*time.Millisecond), code, msg, err))
}

// lorisProbe is the good client: from 127.0.0.1 it logs in to addr and
// sends NOOP every lorisProbeEvery until actx ends, counting rounds in r.
// It returns the good rounds' times and the failures.
func lorisProbe(ctx, actx context.Context, addr string, r *Result) (lat []time.Duration, probeErrs []string) {
	for actx.Err() == nil {
		start := time.Now()
		c, err := login(ctx, "127.0.0.1", addr, lorisProbeBound)
		if err == nil {
			var code int
			code, _, err = c.cmd(lorisProbeBound, "NOOP")
			if err == nil && code != 200 {
				err = fmt.Errorf("NOOP: %d", code)
			}
			c.cmd(time.Second, "QUIT")
			c.close()
		}
		d := time.Since(start)
		r.Rounds++
		if err != nil {
			if d >= lorisProbeBound {
				r.Hangs++
			} else {
				r.Failed++
			}
			probeErrs = append(probeErrs, err.Error())
		} else {
			lat = append(lat, d)
			if d > lorisSlow {
				r.Failed++
				probeErrs = append(probeErrs, fmt.Sprintf("login and NOOP took %v", d))
			}
		}
		r.MaxTime = max(r.MaxTime, d)
		select {
		case <-actx.Done():
		case <-time.After(lorisProbeEvery):
		}
	}
	return lat, probeErrs
}

// lorisCheckCopy judges the ferry cp run during the attack.
func (h *harness) lorisCheckCopy(r *Result, cp runResult, want [32]byte) {
	switch {
	case cp.hung:
		r.Hangs++
		r.notef("ferry cp during the attack hung; dump in %s", h.keep("slowloris-cp.txt", cp.out))
	case cp.err != nil:
		r.Failed++
		r.notef("ferry cp during the attack failed: %v: %s", cp.err, lastLines(cp.out, 2))
	default:
		if sum, _, err := fileSum(filepath.Join(h.scratch, "slowloris-small.bin")); err != nil || sum != want {
			r.Corrupt++
			r.notef("ferry cp during the attack: the copy differs (%v)", err)
		}
	}
}

// lorisCheckStalled checks that the stall timeout ended every stalled
// transfer with 426 or 451.
func (h *harness) lorisCheckStalled(r *Result, ended []string) {
	stalled := 0
	for _, e := range ended {
		if strings.Contains(e, " ended after ") && (strings.Contains(e, ": 426 ") || strings.Contains(e, ": 451 ")) {
			stalled++
		}
	}
	r.notef("half-open uploads and unread downloads (-stall-timeout %v): %s", lorisStall, strings.Join(ended, "; "))
	if stalled < lorisHalfOpen+lorisNoRead && h.cfg.Attack > lorisStall+5*time.Second {
		r.Failed++
		r.notef("only %d of %d stalled transfers were ended with 426/451", stalled, lorisHalfOpen+lorisNoRead)
	}
}
