package stripe

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/testutil/syncbuf"
)

// meddler is a frame-aware TCP proxy between a frontend and a mover: it
// passes the two plain handshake frames each way, then, when told, flips
// a byte of the next sealed frame, sends it twice, or puts a plain frame
// before it.
type meddler struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	action map[bool]string // by direction (true: to the mover): "", "flip", "replay", "inject"
	wg     sync.WaitGroup
	conns  []net.Conn
}

func newMeddler(t *testing.T, target string) *meddler {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	md := &meddler{l: l, target: target, action: map[bool]string{}}
	md.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			m, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			md.mu.Lock()
			md.conns = append(md.conns, c, m)
			md.mu.Unlock()
			md.wg.Go(func() { md.pipe(m, c, true) })
			md.wg.Go(func() { md.pipe(c, m, false) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		md.mu.Lock()
		for _, c := range md.conns {
			c.Close()
		}
		md.mu.Unlock()
		md.wg.Wait()
	})
	return md
}

// accepted is how many connections the meddler has passed on.
func (md *meddler) accepted() int {
	md.mu.Lock()
	defer md.mu.Unlock()
	return len(md.conns) / 2
}

func (md *meddler) set(toMover bool, action string) {
	md.mu.Lock()
	defer md.mu.Unlock()
	md.action[toMover] = action
}

func (md *meddler) pipe(dst, src net.Conn, toMover bool) {
	defer dst.Close()
	defer src.Close()
	for n := 0; ; n++ {
		var h [4]byte
		if _, err := io.ReadFull(src, h[:]); err != nil {
			return
		}
		l := int(binary.BigEndian.Uint32(h[:]))
		if n < 2 {
			l++ // a plain frame's type byte
		}
		if l > 1<<20 {
			return
		}
		frame := make([]byte, 4+l)
		copy(frame, h[:])
		if _, err := io.ReadFull(src, frame[4:]); err != nil {
			return
		}
		out := frame
		if n >= 2 {
			md.mu.Lock()
			switch md.action[toMover] {
			case "flip":
				frame[len(frame)-1] ^= 1
			case "replay":
				out = append(bytes.Clone(frame), frame...)
			case "inject": // a plain frame before this one
				out, _ = AppendFrame(nil, &Msg{Type: TypeAbort, Seq: 1})
				out = append(out, frame...)
			}
			md.action[toMover] = ""
			md.mu.Unlock()
		}
		if _, err := dst.Write(out); err != nil {
			return
		}
	}
}

// waitFor polls cond for up to 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 400 {
		if cond() {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestLinkRefusesTamperedAndReplayedFrames: a byte flipped in transit, a
// frame sent twice, or a plain frame slipped in drops the link with a log
// line saying why, on whichever side received it; the frontend then
// reconnects afresh. (The pool has two links to the mover, its monitor and
// a spare for sessions; the meddler hits whichever sends next.)
func TestLinkRefusesTamperedAndReplayedFrames(t *testing.T) {
	secret := []byte("link-test-secret")
	var moverLog, poolLog syncbuf.Buffer
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mv := &Mover{Storage: memory.New(), Secret: secret, Heartbeat: 20 * time.Millisecond, HeartbeatTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&moverLog, nil))}
	served := make(chan struct{})
	go func() { mv.Serve(l); close(served) }()
	defer func() { mv.Close(); <-served }()
	md := newMeddler(t, l.Addr().String())
	p, err := NewPool(PoolConfig{Movers: []string{md.l.Addr().String()}, Secret: secret,
		Heartbeat: 20 * time.Millisecond, HeartbeatTimeout: 2 * time.Second, MaxBackoff: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&poolLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct {
		toMover     bool
		action      string
		log         *syncbuf.Buffer
		want, where string
	}{
		{true, "flip", &moverLog, "frame failed authentication", "mover"},
		{true, "replay", &moverLog, "frame out of sequence", "mover"},
		{true, "inject", &moverLog, "frame failed authentication", "mover"},
		{false, "flip", &poolLog, "frame failed authentication", "frontend"},
		{false, "replay", &poolLog, "frame out of sequence", "frontend"},
	} {
		waitFor(t, "the mover up", func() bool { return p.Up() == 1 })
		before := strings.Count(tc.log.String(), tc.want)
		conns := md.accepted()
		md.set(tc.toMover, tc.action)
		waitFor(t, "the "+tc.where+" to log "+tc.want, func() bool { return strings.Count(tc.log.String(), tc.want) > before })
		waitFor(t, "a new link", func() bool { return md.accepted() > conns })
	}
	if !strings.Contains(moverLog.String(), "dropping the link") {
		t.Errorf("mover log:\n%s", moverLog.String())
	}
	waitFor(t, "the mover up again", func() bool { return p.Up() == 1 })
}
