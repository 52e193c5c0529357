package chaos

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// scanPorts is the size of the scanned passive port range.
const scanPorts = 48

// scan runs Config.Scans rounds, each a download and an upload with
// ferry cp -p 8 while scanners connect to every port of the server's
// passive range (-port-range) again and again, and to each data port the
// control channel announces (the server's EPSV/PASV replies, the
// client's PORT/EPRT), before the peer hears of it. The scan comes from
// 127.0.0.2, another host, or with ownHost from 127.0.0.1, the client's
// own address, which the server cannot tell from the client's without
// data channel authentication (DCAU).
func (h *harness) scan(ctx context.Context, ownHost bool) (Result, error) {
	var r Result
	rng := h.rng(Scan)
	from := "127.0.0.2"
	if ownHost {
		from = "127.0.0.1"
	}
	low := 20000 + rng.IntN(8000)
	high := low + scanPorts - 1
	s, err := h.startSite("scan-"+from, "", 0, "-port-range", fmt.Sprintf("%d,%d", low, high))
	if err != nil {
		return r, err
	}
	local := filepath.Join(h.scratch, "scan-local-"+from)
	if err := os.MkdirAll(local, 0o755); err != nil {
		return r, err
	}
	for i := range h.cfg.Scans {
		for _, upload := range []bool{false, true} {
			name := fmt.Sprintf("s%02d.bin", i)
			srcPath, dstPath := filepath.Join(s.root, name), filepath.Join(local, name)
			src, dst := s.url(name), dstPath
			dir := "download"
			if upload {
				srcPath, dstPath = dstPath, srcPath
				src, dst = srcPath, s.url(name)
				dir = "upload"
			}
			want, err := writeRandom(srcPath, h.cfg.ScanSize, h.cfg.Seed+uint64(i))
			if err != nil {
				return r, err
			}
			sc := &scanner{from: from, low: low, high: high, seed: rng.Uint64(), noForgery: h.cfg.ScanNoForgery}
			stop := sc.start(ctx)
			// The copy goes through a sniffing proxy, which has strays
			// connect to each announced port before the client hears of it.
			sn, err := startSniffer(s.serve.addr, func(port int) { sc.burst(ctx, port) })
			if err != nil {
				stop()
				return r, err
			}
			through := func(u string) string {
				if u == s.url(name) {
					return "ftp://" + sn.addr() + "/" + name
				}
				return u
			}
			res := runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, nil, s.dumpAll, "cp", "-stall-timeout", min(30*time.Second, h.cfg.StepBound/3).String(), "-p", "8", through(src), through(dst))
			sn.close()
			stop()
			what := fmt.Sprintf("round %d: %s of %d bytes, -p 8, scanned from %s (%d connections: %d closed at once, %d garbage, %d forged MODE E blocks, %d held open, %d read)",
				i, dir, h.cfg.ScanSize, from, sc.conns.Load(), sc.kinds[0].Load(), sc.kinds[1].Load(), sc.kinds[2].Load(), sc.kinds[3].Load(), sc.kinds[4].Load())
			fmt.Fprintf(h.cfg.Progress, "chaos: scan %s: %v in %v\n", what, res.err, res.took.Round(time.Millisecond))
			r.Rounds++
			r.MaxTime = max(r.MaxTime, res.took)
			switch {
			case res.hung:
				r.Hangs++
				r.notef("%s: hung; dump in %s", what, h.keep(name+".scan-hang.txt", res.out))
			case res.err != nil:
				r.Lost++
				r.notef("%s: ferry cp failed: %v: %s", what, res.err, lastLines(res.out, 3))
			default:
				if sum, n, err := fileSum(dstPath); err != nil || sum != want {
					r.Corrupt++
					r.notef("%s: ferry cp succeeded but the copy (%d bytes) differs: %v", what, n, err)
				}
			}
			if i == 0 && !upload {
				r.notef("%s", what)
			}
			os.Remove(srcPath)
			os.Remove(dstPath)
		}
	}
	return r, nil
}

// scanner connects from one address to the ports low..high, again and
// again, and does one of five things on each connection: close at once,
// send garbage, send a forged MODE E data block (64 KiB of zeros at
// offset 0) and EOD, hold the connection open without a byte, or read
// what comes.
type scanner struct {
	from      string
	low, high int
	seed      uint64
	conns     atomic.Int64
	kinds     [5]atomic.Int64
	noForgery bool           // never kind 2 (forged MODE E blocks)
	wg        sync.WaitGroup // bursts' connections
}

func (sc *scanner) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 12 {
		rng := rand.New(rand.NewPCG(sc.seed, uint64(w)))
		wg.Go(func() {
			port := sc.low + rng.IntN(sc.high-sc.low+1)
			for ctx.Err() == nil {
				port++
				if port > sc.high {
					port = sc.low
				}
				conn, err := dialFrom(ctx, sc.from, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
				if err != nil {
					// Nothing listens there: the usual case. Do not spin.
					time.Sleep(200 * time.Microsecond)
					continue
				}
				kind, seed := sc.pick(rng)
				wg.Go(func() { sc.abuse(ctx, conn, kind, seed) })
			}
		})
	}
	return func() { cancel(); wg.Wait(); sc.wg.Wait() }
}

// burst opens four stray connections of random kinds to port at once.
func (sc *scanner) burst(ctx context.Context, port int) {
	rng := rand.New(rand.NewPCG(sc.seed, uint64(port)))
	for range 4 {
		conn, err := dialFrom(ctx, sc.from, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
		if err != nil {
			continue
		}
		kind, seed := sc.pick(rng)
		sc.wg.Go(func() { sc.abuse(ctx, conn, kind, seed) })
	}
}

// pick counts a stray connection just opened and draws, from rng, the
// kind of abuse it does and the seed of its own random numbers (drawn
// here: rng is not the abusing goroutine's).
func (sc *scanner) pick(rng *rand.Rand) (kind int, seed uint64) {
	sc.conns.Add(1)
	kind = rng.IntN(5)
	if kind == 2 && sc.noForgery {
		kind = 1 // garbage instead
	}
	sc.kinds[kind].Add(1)
	return kind, rng.Uint64()
}

func (sc *scanner) abuse(ctx context.Context, conn net.Conn, kind int, seed uint64) {
	defer conn.Close()
	hold := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	switch kind {
	case 0:
	case 1:
		b := make([]byte, 64)
		rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(b)
		conn.Write(b)
		hold(100 * time.Millisecond)
	case 2:
		// MODE E: descriptor, 8-byte count, 8-byte offset (GFD.20).
		hdr := make([]byte, 17)
		binary.BigEndian.PutUint64(hdr[1:], 64<<10)
		conn.Write(hdr)
		conn.Write(make([]byte, 64<<10))
		eod := make([]byte, 17)
		eod[0] = 0x08 | 0x40 // EOF, EOD
		binary.BigEndian.PutUint64(eod[9:], 1)
		conn.Write(eod)
		hold(500 * time.Millisecond)
	case 3:
		hold(2 * time.Second)
	case 4:
		buf := make([]byte, 32<<10)
		for ctx.Err() == nil {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	end := len(s)
	for end > 0 && (s[end-1] == '\n' || s[end-1] == ' ') {
		end--
	}
	i := end
	for ; i > 0 && n > 0; i-- {
		if s[i-1] == '\n' {
			n--
			if n == 0 {
				break
			}
		}
	}
	return s[i:end]
}
