package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Kill-round choices.
var (
	killModes   = []string{"p1", "p4", "striped"}
	modeFlags   = map[string][]string{"p1": {"-p", "1"}, "p4": {"-p", "4"}, "striped": {"-stripe", "-p", "2"}}
	maxAttempts = 10
)

// kill runs Config.Rounds rounds: a copy, a SIGKILL of the client, the
// server or a mover after a random delay, the dead process started again
// and the copy run again until it succeeds.
func (h *harness) kill(ctx context.Context) (Result, error) {
	var r Result
	plain, err := h.startSite("kill-plain", "", 0)
	if err != nil {
		return r, err
	}
	striped, err := h.startSite("kill-striped", "", 2)
	if err != nil {
		return r, err
	}
	local := filepath.Join(h.scratch, "kill-local")
	if err := os.MkdirAll(local, 0o755); err != nil {
		return r, err
	}
	// Loopback copies take tens of milliseconds: time one of each kind so
	// that the kill lands in the copy, at a random fraction of its
	// expected duration.
	took := map[string]time.Duration{}
	for _, mode := range killModes {
		for _, up := range []bool{false, true} {
			s := plain
			if mode == "striped" {
				s = striped
			}
			d, err := h.timeCopy(ctx, s, local, mode, up)
			if err != nil {
				return r, err
			}
			took[fmt.Sprint(mode, up)] = d
		}
	}
	r.notef("an uninterrupted copy of %d bytes took %v", h.cfg.MaxSize, took)
	rng := h.rng(Kill)
	for i := range h.cfg.Rounds {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		kr := killRound{
			i:      i,
			size:   1<<20 + rng.Int64N(h.cfg.MaxSize-1<<20+1),
			upload: rng.IntN(2) == 0,
			mode:   killModes[rng.IntN(len(killModes))],
			seed:   h.cfg.Seed<<16 + uint64(i),
		}
		frac := rng.Float64() * 1.1
		est := float64(took[fmt.Sprint(kr.mode, kr.upload)]) * float64(kr.size) / float64(h.cfg.MaxSize)
		kr.delay = time.Duration(frac * max(est, float64(5*time.Millisecond)))
		s := plain
		victims := []string{"client", "server"}
		if kr.mode == "striped" {
			s = striped
			victims = append(victims, "mover")
		}
		kr.victim = victims[rng.IntN(len(victims))]
		kr.mover = rng.IntN(2)
		if err := h.killRound(ctx, s, local, kr, &r); err != nil {
			return r, err
		}
		r.Rounds++
	}
	return r, nil
}

type killRound struct {
	i      int
	size   int64
	upload bool
	mode   string
	victim string
	mover  int
	delay  time.Duration
	seed   uint64
}

func (k killRound) String() string {
	dir := "download"
	if k.upload {
		dir = "upload"
	}
	return fmt.Sprintf("round %d: %s %d bytes %s, kill %s after %v", k.i, dir, k.size, k.mode, k.victim, k.delay.Round(time.Millisecond))
}

// killRound runs one round and adds its outcome to r. The error is for
// the harness (a server that does not start again).
func (h *harness) killRound(ctx context.Context, s *site, local string, k killRound, r *Result) error {
	name := fmt.Sprintf("r%03d.bin", k.i)
	srcPath, dstPath := filepath.Join(s.root, name), filepath.Join(local, name)
	src, dst := s.url(name), dstPath
	if k.upload {
		srcPath, dstPath = dstPath, srcPath
		src, dst = srcPath, s.url(name)
	}
	want, err := writeRandom(srcPath, k.size, k.seed)
	if err != nil {
		return err
	}
	defer func() {
		// Leave nothing behind for the next round.
		for _, p := range []string{srcPath, dstPath, dstPath + ".ferry-ranges", filepath.Join(s.root, "."+name+".ferry-part")} {
			os.Remove(p)
		}
	}()
	c := &killCopy{h: h, s: s, k: k, r: r, name: name, dstPath: dstPath, want: want,
		args: append(append([]string{"cp", "-stall-timeout", "30s"}, modeFlags[k.mode]...), src, dst)}

	// The same check runs every few milliseconds while the copies run.
	w := &watcher{upload: k.upload, dst: dstPath, size: k.size, want: want}
	stopWatch := w.start()
	defer func() {
		if v := stopWatch(); v != "" && !c.bad {
			r.Corrupt++
			r.notef("%v: while ferry cp ran: %s", k, v)
		}
	}()

	ok, mid, killedAt, err := c.killed(ctx)
	if err != nil {
		return err
	}
	ok, outs, err := c.again(ctx, ok, killedAt)
	if err != nil {
		return err
	}
	recovery := time.Since(killedAt)
	c.judge(ok, outs, recovery)
	fmt.Fprintf(h.cfg.Progress, "chaos: %v: mid-copy %v, ok %v, recovery %v\n", k, mid, ok, recovery.Round(time.Millisecond))
	return nil
}

// killCopy is the copy of one kill round.
type killCopy struct {
	h       *harness
	s       *site
	k       killRound
	r       *Result
	name    string
	dstPath string
	want    [32]byte
	args    []string // ferry cp's
	bad     bool     // a corrupt destination was counted
}

// observe checks that the destination's final name never holds a
// file that differs from the source: a partial download keeps its
// .ferry-ranges beside it, a partial upload stays a part file.
func (c *killCopy) observe(when string) {
	if c.bad {
		return
	}
	if !c.k.upload {
		if _, err := os.Stat(c.dstPath + ".ferry-ranges"); err == nil {
			return
		}
	}
	sum, n, err := fileSum(c.dstPath)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil || sum != c.want {
		c.bad = true
		c.r.Corrupt++
		c.r.notef("%v: %s: %s holds %d of %d bytes, not the source's content, and no state marks it partial (%v)", c.k, when, filepath.Base(c.dstPath), n, c.k.size, err)
	}
}

// killed runs the first copy and kills the round's victim after its
// delay; it reports whether that run succeeded, whether the kill came
// mid-copy, and when it came.
func (c *killCopy) killed(ctx context.Context) (ok, mid bool, killedAt time.Time, err error) {
	h, s, k, r := c.h, c.s, c.k, c.r
	kill := make(chan struct{})
	first := make(chan runResult, 1)
	go func() { first <- runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, kill, s.dumpAll, c.args...) }()
	select {
	case <-time.After(k.delay):
	case res := <-first:
		first <- res
	}
	killedAt = time.Now()
	select {
	case res := <-first:
		first <- res
	default:
		mid = true
	}
	var restart error
	switch k.victim {
	case "client":
		close(kill)
	case "server":
		s.serve.kill()
		restart = s.serve.restartOn(30 * time.Second)
	case "mover":
		s.movers[k.mover].kill()
		restart = s.movers[k.mover].restartOn(30 * time.Second)
	}
	if restart != nil {
		return false, mid, killedAt, fmt.Errorf("%v: restarting the %s: %w", k, k.victim, restart)
	}
	res := <-first
	if mid && (k.victim != "client" || res.killed) {
		r.MidCopy++
	}
	ok = res.err == nil
	if res.hung {
		r.Hangs++
		r.notef("%v: first run hung; dump in %s", k, h.keep(c.name+".hang.txt", res.out))
	}
	c.observe("after the kill")
	if err := s.waitUp(ctx, 30*time.Second); err != nil {
		r.Hangs++
		r.notef("%v: %v; dump in %s", k, err, h.keep(c.name+".up.txt", s.dumpAll()))
	}
	return ok, mid, killedAt, nil
}

// again runs the copy again until it succeeds, for at most maxAttempts
// runs and 3 StepBounds after the kill; it returns the runs' outputs.
func (c *killCopy) again(ctx context.Context, ok bool, killedAt time.Time) (bool, []string, error) {
	h, s, k, r := c.h, c.s, c.k, c.r
	var outs []string
	for attempt := 0; !ok && attempt < maxAttempts && time.Since(killedAt) < 3*h.cfg.StepBound; attempt++ {
		res := runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, nil, s.dumpAll, c.args...)
		if ctx.Err() != nil {
			return ok, outs, ctx.Err()
		}
		outs = append(outs, res.out)
		if res.hung {
			r.Hangs++
			r.notef("%v: run %d hung; dump in %s", k, attempt+2, h.keep(fmt.Sprintf("%s.hang%d.txt", c.name, attempt+2), res.out))
		}
		if res.hung {
			s.waitUp(ctx, 30*time.Second)
		}
		ok = res.err == nil
		c.observe(fmt.Sprintf("after run %d", attempt+2))
		if !ok {
			time.Sleep(200 * time.Millisecond)
		}
	}
	return ok, outs, nil
}

// judge counts the round's outcome: lost, or a success whose destination
// must match the source with no partial state left.
func (c *killCopy) judge(ok bool, outs []string, recovery time.Duration) {
	h, s, k, r, dstPath := c.h, c.s, c.k, c.r, c.dstPath
	if !ok {
		r.Lost++
		r.notef("%v: no run succeeded (%d runs); outputs in %s", k, len(outs)+1, h.keep(c.name+".lost.txt", fmt.Sprint(outs)))
		return
	}
	r.MaxTime = max(r.MaxTime, recovery)
	sum, n, err := fileSum(dstPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.Lost++
		r.notef("%v: ferry cp succeeded but %s is missing", k, dstPath)
	case err != nil || sum != c.want:
		if !c.bad {
			r.Corrupt++
		}
		r.notef("%v: ferry cp succeeded but %s has %d of %d bytes and differs (%v)", k, filepath.Base(dstPath), n, k.size, err)
	}
	for _, p := range []string{dstPath + ".ferry-ranges", filepath.Join(s.root, "."+c.name+".ferry-part")} {
		if _, err := os.Stat(p); err == nil {
			r.Failed++
			r.notef("%v: %s left behind after success", k, filepath.Base(p))
		}
	}
}

// timeCopy times an uninterrupted copy of Config.MaxSize bytes.
func (h *harness) timeCopy(ctx context.Context, s *site, local, mode string, upload bool) (time.Duration, error) {
	name := "calibrate.bin"
	srcPath, dstPath := filepath.Join(s.root, name), filepath.Join(local, name)
	src, dst := s.url(name), dstPath
	if upload {
		srcPath, dstPath = dstPath, srcPath
		src, dst = srcPath, s.url(name)
	}
	defer os.Remove(srcPath)
	defer os.Remove(dstPath)
	if _, err := writeRandom(srcPath, h.cfg.MaxSize, 1); err != nil {
		return 0, err
	}
	res := runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, nil, s.dumpAll, append(append([]string{"cp"}, modeFlags[mode]...), src, dst)...)
	if res.err != nil {
		return 0, fmt.Errorf("timing a %s copy: %v: %s", mode, res.err, res.out)
	}
	return res.took, nil
}

// watcher looks at a copy's destination every few milliseconds while the
// copy runs (and is killed, and runs again): its final name must never
// hold a file of another size, or, checked at most every 50 ms, other
// bytes, unless (downloads) a .ferry-ranges file beside it marks it
// partial. A download's ranges file is looked at first: one removed in
// between means the file was complete by then.
type watcher struct {
	upload bool
	dst    string
	size   int64
	want   [32]byte

	stop     chan struct{}
	done     chan struct{}
	found    string
	lastHash time.Time
}

func (w *watcher) start() (stop func() string) {
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for w.found == "" {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			w.found = w.look()
		}
	}()
	return func() string {
		close(w.stop)
		<-w.done
		return w.found
	}
}

func (w *watcher) look() string {
	if !w.upload {
		if _, err := os.Stat(w.dst + ".ferry-ranges"); err == nil {
			return ""
		}
	}
	fi, err := os.Stat(w.dst)
	if err != nil {
		return ""
	}
	if fi.Size() != w.size {
		return fmt.Sprintf("%s held %d of %d bytes with nothing marking it partial", filepath.Base(w.dst), fi.Size(), w.size)
	}
	if time.Since(w.lastHash) < 50*time.Millisecond {
		return ""
	}
	w.lastHash = time.Now()
	if !w.upload {
		// Hashing takes a while: only a file that stays unmarked
		// throughout counts.
		sum, _, err := fileSum(w.dst)
		if _, rerr := os.Stat(w.dst + ".ferry-ranges"); err != nil || rerr == nil {
			return ""
		}
		if sum != w.want {
			return fmt.Sprintf("%s held %d bytes other than the source's with nothing marking it partial", filepath.Base(w.dst), w.size)
		}
		return ""
	}
	if sum, _, err := fileSum(w.dst); err == nil && sum != w.want {
		return fmt.Sprintf("%s held %d bytes other than the source's", filepath.Base(w.dst), w.size)
	}
	return ""
}
