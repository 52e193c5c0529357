package eblock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// memFile is an in-memory dsi.Writer and io.ReaderAt without zero-copy paths.
type memFile struct {
	mu sync.Mutex
	b  []byte
}

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if need := int(off) + len(p); need > len(m.b) {
		m.b = append(m.b, make([]byte, need-len(m.b))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *memFile) Close() error { return nil }

// pairs returns n connected loopback TCP pairs.
func pairs(t testing.TB, n int) (senders, receivers []net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range n {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		senders, receivers = append(senders, c), append(receivers, s)
	}
	t.Cleanup(func() {
		for i := range senders {
			senders[i].Close()
			receivers[i].Close()
		}
	})
	return senders, receivers
}

func random(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Count: 5, Offset: 7},
		{Desc: DescEOD},
		{Desc: DescEOF | DescEOD, Offset: 4},
		{Desc: DescEOD | DescClose},
		{Count: 1 << 62, Offset: 1<<62 - 1},
	} {
		var b [HeaderSize]byte
		h.Put(b[:])
		got, err := ParseHeader(b[:])
		if err != nil || got != h {
			t.Errorf("%v: got %v, %v", h, got, err)
		}
		for i := range HeaderSize {
			if _, err := ParseHeader(b[:i]); err == nil {
				t.Errorf("%v: a %d-byte prefix parsed", h, i)
			}
		}
	}
	bad := []Header{
		{Count: 1 << 63},
		{Count: 1 << 62, Offset: 1 << 62},
		{Desc: DescEOF},                  // EOD count 0
		{Desc: DescEOF, Offset: 1 << 16}, // absurd EOD count
		{Desc: DescClose, Count: 1},      // CLOSE without EOD
	}
	for _, h := range bad {
		var b [HeaderSize]byte
		h.Put(b[:])
		if _, err := ParseHeader(b[:]); !errors.Is(err, ErrBadHeader) {
			t.Errorf("%v parsed: %v", h, err)
		}
	}
	// An EOF header's count is ignored, as GCT does.
	var b [HeaderSize]byte
	Header{Desc: DescEOF | DescEOD, Count: 99, Offset: 1}.Put(b[:])
	if h, err := ParseHeader(b[:]); err != nil || h.Count != 0 {
		t.Errorf("EOF with count: %v %v", h, err)
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add(make([]byte, HeaderSize))
	f.Add([]byte{0x48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		var out [HeaderSize]byte
		h.Put(out[:])
		h2, err := ParseHeader(out[:])
		if err != nil || h2 != h {
			t.Fatalf("re-encoded %v gave %v, %v", h, h2, err)
		}
	})
}

// transfer sends data over n connections and returns what the receiver stored.
func transfer(t *testing.T, data []byte, n int, ranges []xfer.Range, scfg SendConfig, rcfg ReceiveConfig) (*memFile, *Receiver, error) {
	t.Helper()
	s, r := pairs(t, n)
	dst := &memFile{}
	rcv := NewReceiver(dst, rcfg)
	for _, c := range r {
		if !rcv.Add(c) {
			t.Fatal("receiver refused a connection")
		}
	}
	var sendErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		_, sendErr = Send(ctx(t), s, bytes.NewReader(data), ranges, scfg)
	})
	got, err := rcv.Wait(ctx(t))
	wg.Wait()
	if sendErr != nil {
		t.Fatalf("Send: %v", sendErr)
	}
	if err == nil && got != int64(len(dst.b)) && ranges == nil {
		t.Fatalf("receiver counted %d bytes, stored %d", got, len(dst.b))
	}
	return dst, rcv, err
}

func TestTransfer(t *testing.T) {
	for _, tt := range []struct {
		name  string
		size  int
		conns int
		bs    int
	}{
		{"empty one stream", 0, 1, 0},
		{"empty four streams", 0, 4, 0},
		{"one byte", 1, 4, 0},
		{"small blocks", 1<<20 + 3, 4, 4096},
		{"default blocks 8 streams", 9<<20 + 1, 8, 0},
		{"odd block size", 300000, 3, 7777},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := random(tt.size, 1)
			ranges := []xfer.Range{{Start: 0, End: int64(tt.size)}}
			var sent, recv atomic.Int64
			dst, rcv, err := transfer(t, data, tt.conns, ranges, SendConfig{BlockSize: tt.bs, Sent: &sent}, ReceiveConfig{Limit: -1, Received: &recv})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst.b, data) {
				t.Fatalf("contents differ (%d vs %d bytes)", len(dst.b), len(data))
			}
			if sent.Load() != int64(tt.size) || recv.Load() != int64(tt.size) {
				t.Fatalf("counters: sent %d received %d", sent.Load(), recv.Load())
			}
			if len(rcv.Reusable()) != tt.conns {
				t.Fatalf("%d reusable connections, want %d", len(rcv.Reusable()), tt.conns)
			}
			if got := rcv.TakeCommitted(); tt.size > 0 && (len(got) != 1 || got[0] != ranges[0]) {
				t.Fatalf("committed %v", got)
			}
		})
	}
}

func TestPartialAndRestart(t *testing.T) {
	data := random(100000, 2)
	// ERET-style window: file bytes 1000-6000 become virtual offsets 0-5000,
	// stored by an ESTO-style receiver at file offset 1000 again.
	dst, _, err := transfer(t, data, 2, []xfer.Range{{Start: 1000, End: 6000}},
		SendConfig{BlockSize: 1024, Base: 1000}, ReceiveConfig{Base: 1000, Limit: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.b[1000:], data[1000:6000]) {
		t.Fatal("window contents differ")
	}
	// Restart: only the missing ranges travel, at their own offsets.
	dst, rcv, err := transfer(t, data, 3, []xfer.Range{{Start: 50000, End: 60000}, {Start: 70000, End: 100000}},
		SendConfig{BlockSize: 4096}, ReceiveConfig{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.b[50000:60000], data[50000:60000]) || !bytes.Equal(dst.b[70000:], data[70000:]) {
		t.Fatal("restarted ranges differ")
	}
	if got := rcv.TakeCommitted(); len(got) != 2 {
		t.Fatalf("committed %v", got)
	}
}

func TestCloseAndReuse(t *testing.T) {
	data := random(50000, 3)
	s, r := pairs(t, 2)
	whole := []xfer.Range{{Start: 0, End: 50000}}
	for round := range 2 {
		dst := &memFile{}
		rcv := NewReceiver(dst, ReceiveConfig{Limit: -1})
		for _, c := range r {
			rcv.Add(c)
		}
		errc := make(chan error, 1)
		go func() {
			_, err := Send(ctx(t), s, bytes.NewReader(data), whole, SendConfig{BlockSize: 1000, Close: round == 1})
			errc <- err
		}()
		if _, err := rcv.Wait(ctx(t)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst.b, data) {
			t.Fatalf("round %d: contents differ", round)
		}
		want := 2
		if round == 1 {
			want = 0 // CLOSE: nothing to cache
		}
		if got := len(rcv.Reusable()); got != want {
			t.Fatalf("round %d: %d reusable", round, got)
		}
	}
}

// raw writes hand-made headers and payloads on one connection.
func raw(c net.Conn, parts ...any) {
	for _, p := range parts {
		switch p := p.(type) {
		case Header:
			var b [HeaderSize]byte
			p.Put(b[:])
			c.Write(b[:])
		case []byte:
			c.Write(p)
		}
	}
}

func TestEOFFirstAndLateConnections(t *testing.T) {
	// GCT may send EOF before any data and open connections after some EODs.
	s, r := pairs(t, 3)
	dst := &memFile{}
	rcv := NewReceiver(dst, ReceiveConfig{Limit: -1})
	rcv.Add(r[0])
	raw(s[0], Header{Desc: DescEOF, Offset: 3}, Header{Count: 3, Offset: 3}, []byte("def"), Header{Desc: DescEOD})
	rcv.Add(r[1])
	raw(s[1], Header{Count: 3}, []byte("abc"), Header{Desc: DescEOD})
	select {
	case <-rcv.Done():
		t.Fatal("done after 2 of 3 EODs")
	case <-time.After(50 * time.Millisecond):
	}
	rcv.Add(r[2])
	raw(s[2], Header{Desc: DescEOD})
	if _, err := rcv.Wait(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if string(dst.b) != "abcdef" {
		t.Fatalf("got %q", dst.b)
	}
	// The EOD count is reached: a fourth connection is refused.
	_, extra := pairs(t, 1)
	if rcv.Add(extra[0]) {
		t.Fatal("accepted a connection after completion")
	}
}

// TestExtraConnectionsRefused: once MaxConns connections take part
// (valid first header), another is refused.
func TestExtraConnectionsRefused(t *testing.T) {
	s, r := pairs(t, 3)
	rcv := NewReceiver(&memFile{}, ReceiveConfig{Limit: -1, MaxConns: 2})
	if !rcv.Add(r[0]) || !rcv.Add(r[1]) {
		t.Fatal("candidates refused")
	}
	raw(s[0], Header{Count: 1}, []byte("a"))
	raw(s[1], Header{Count: 1, Offset: 1}, []byte("b"))
	for k := 0; rcv.Conns() < 2; k++ {
		if k > 10000 {
			t.Fatalf("%d connections take part, want 2", rcv.Conns())
		}
		time.Sleep(time.Millisecond)
	}
	if rcv.Add(r[2]) {
		t.Fatal("MaxConns not enforced")
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rcv.Wait(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait: %v", err)
	}
}

func TestProtocolViolations(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit int64
		parts []any
	}{
		// A connection's first header must be valid (else it is a stray,
		// dropped: TestStraysDropped); the violations come after one.
		{"past ALLO", 10, []any{Header{Count: 2}, []byte("ab"), Header{Count: 5, Offset: 8}, []byte("xxxxx")}},
		{"overlap", -1, []any{Header{Count: 4}, []byte("aaaa"), Header{Count: 4, Offset: 2}, []byte("bbbb")}},
		{"overflow", -1, []any{Header{Count: 2}, []byte("ab"), Header{Count: 1 << 62, Offset: 1 << 62}}},
		{"EOD count too high", -1, []any{Header{Count: 2}, []byte("ab"), Header{Desc: DescEOF | DescEOD, Offset: 1000}}},
		{"eof without EOD", -1, []any{Header{Count: 4}, []byte("ab")}},
		{"too many EODs", -1, []any{Header{Desc: DescEOD}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, r := pairs(t, 2)
			rcv := NewReceiver(&memFile{}, ReceiveConfig{Limit: tt.limit})
			rcv.Add(r[0])
			raw(s[0], tt.parts...)
			if tt.name == "eof without EOD" {
				s[0].Close()
			}
			if tt.name == "too many EODs" {
				// Only once the first EOD is counted is the second one too many.
				for i := 0; len(rcv.Reusable()) == 0; i++ {
					if i > 10000 {
						t.Fatal("first EOD never counted")
					}
					time.Sleep(time.Millisecond)
				}
				rcv.Add(r[1])
				raw(s[1], Header{Count: 1}, []byte("a"), Header{Desc: DescEOF | DescEOD, Offset: 1}) // two connections, count 1
			}
			_, err := rcv.Wait(ctx(t))
			var de *xfer.DataError
			if !errors.Is(err, ErrProtocol) && !errors.As(err, &de) {
				t.Fatalf("got %v, want a protocol or data error", err)
			}
		})
	}
}

// shortReader fails after n bytes, like a file truncated under the sender.
type shortReader struct {
	r io.ReaderAt
	n int64
}

func (s shortReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.n {
		return 0, io.EOF
	}
	return s.r.ReadAt(p[:min(int64(len(p)), s.n-off)], off)
}

func TestSendStorageError(t *testing.T) {
	data := random(100000, 4)
	s, r := pairs(t, 2)
	for _, c := range r {
		go io.Copy(io.Discard, c)
	}
	_, err := Send(ctx(t), s, shortReader{bytes.NewReader(data), 5000}, []xfer.Range{{Start: 0, End: 100000}}, SendConfig{BlockSize: 4096})
	var se *xfer.StorageError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a storage error", err)
	}
}

var _ dsi.Writer = (*memFile)(nil)

func TestPerConnectionCounters(t *testing.T) {
	data := random(3<<20+5, 5)
	const n = 4
	sent := make([]atomic.Int64, n)
	recv := make([]atomic.Int64, n)
	_, _, err := transfer(t, data, n, []xfer.Range{{Start: 0, End: int64(len(data))}},
		SendConfig{BlockSize: 64 << 10, ConnSent: sent}, ReceiveConfig{Limit: -1, ConnReceived: recv})
	if err != nil {
		t.Fatal(err)
	}
	var s, r int64
	for i := range n {
		s += sent[i].Load()
		r += recv[i].Load()
	}
	if s != int64(len(data)) || r != int64(len(data)) {
		t.Fatalf("per-connection sums: sent %d, received %d, want %d", s, r, len(data))
	}
	// Each connection's share arrives on the connection it left on; the
	// receiver numbers connections as they take part (first header), not
	// as they were added.
	var ss, rs []int64
	for i := range n {
		ss, rs = append(ss, sent[i].Load()), append(rs, recv[i].Load())
	}
	slices.Sort(ss)
	slices.Sort(rs)
	if !slices.Equal(ss, rs) {
		t.Errorf("per-connection bytes: sent %v, received %v", ss, rs)
	}
}

// TestStraysDropped: connections that end, send garbage or send an
// impossible first header before the real ones neither fail the transfer
// nor take its connections' places (globus-toolkit#93, a scanner on the
// peer's host: docs/bench/chaos.md, defect 2).
func TestStraysDropped(t *testing.T) {
	data := random(1<<20+7, 6)
	const real = 3
	strays := []func(c net.Conn){
		func(c net.Conn) { c.Close() },
		func(c net.Conn) { c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); c.Close() },
		func(c net.Conn) { c.Write([]byte{0, 1, 2}); c.Close() },                                  // part of a header
		func(c net.Conn) { raw(c, Header{Count: 5, Offset: uint64(len(data))}, []byte("xxxxx")) }, // past ALLO
		func(c net.Conn) { raw(c, Header{Desc: DescEOF | DescEOD, Offset: 9999}) },                // EOD count too high
		func(c net.Conn) { raw(c, Header{Desc: 0xff, Count: 1}) },                                 // bad descriptor
		func(c net.Conn) { raw(c, Header{Count: 1 << 40, Offset: 3}) },                            // random bytes that parse (no ALLO below)
	}
	s, r := pairs(t, len(strays)+real)
	dst := &memFile{}
	var dropped atomic.Int64
	rcv := NewReceiver(dst, ReceiveConfig{Limit: int64(len(data)), MaxConns: real, Dropped: func(net.Conn) { dropped.Add(1) }})
	// The strays come first and would fill MaxConns; as many candidates
	// as MaxConns may wait at once, so each is dropped before the next.
	for i, stray := range strays {
		if !rcv.Add(r[i]) {
			t.Fatalf("stray %d refused as a candidate", i)
		}
		stray(s[i])
		for k := 0; dropped.Load() < int64(i+1); k++ {
			if k > 10000 {
				t.Fatalf("stray %d never dropped", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if n := rcv.Conns(); n != 0 {
		t.Fatalf("strays take part: %d connections", n)
	}
	for _, c := range r[len(strays):] {
		if !rcv.Add(c) {
			t.Fatal("a real connection refused after the strays")
		}
	}
	var sendErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		_, sendErr = Send(ctx(t), s[len(strays):], bytes.NewReader(data), []xfer.Range{{Start: 0, End: int64(len(data))}}, SendConfig{BlockSize: 64 << 10})
	})
	n, err := rcv.Wait(ctx(t))
	wg.Wait()
	if err != nil || sendErr != nil {
		t.Fatalf("receive: %v; send: %v", err, sendErr)
	}
	if n != int64(len(data)) || !bytes.Equal(dst.b, data) {
		t.Fatalf("received %d bytes, want the %d sent", n, len(data))
	}
	if k := rcv.Conns(); k != real {
		t.Fatalf("%d connections take part, want %d", k, real)
	}
}

// TestSilentStraysEvicted: strangers that connect and then say nothing
// (they hold the connection open, or only read) fill the candidates'
// room before the peer's streams arrive in a burst, none of them read
// yet; the oldest candidates are dropped to make room, no real stream is
// refused, and the transfer completes (CI, TestScanOwnHostBrief: a
// refused stream reset the sender's sendfile).
func TestSilentStraysEvicted(t *testing.T) {
	data := random(1<<20+7, 7)
	const real = 3
	const silent = 2*real + 2 // more than fit beside nothing
	s, r := pairs(t, silent+real)
	dst := &memFile{}
	var dropped atomic.Int64
	rcv := NewReceiver(dst, ReceiveConfig{Limit: int64(len(data)), MaxConns: real, Dropped: func(net.Conn) { dropped.Add(1) }})
	for i := range silent {
		if !rcv.Add(r[i]) {
			t.Fatalf("silent stray %d refused as a candidate", i)
		}
	}
	if n := rcv.Candidates(); n != 2*real {
		t.Fatalf("%d candidates wait, want %d (the oldest evicted)", n, 2*real)
	}
	for i, c := range r[silent:] {
		if !rcv.Add(c) {
			t.Fatalf("real stream %d refused after silent strays", i)
		}
	}
	var sendErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		_, sendErr = Send(ctx(t), s[silent:], bytes.NewReader(data), []xfer.Range{{Start: 0, End: int64(len(data))}}, SendConfig{BlockSize: 64 << 10})
	})
	n, err := rcv.Wait(ctx(t))
	wg.Wait()
	if err != nil || sendErr != nil {
		t.Fatalf("receive: %v; send: %v", err, sendErr)
	}
	if n != int64(len(data)) || !bytes.Equal(dst.b, data) {
		t.Fatalf("received %d bytes, want the %d sent", n, len(data))
	}
	if k := rcv.Conns(); k != real {
		t.Fatalf("%d connections take part, want %d", k, real)
	}
	if d := dropped.Load(); d != silent {
		t.Fatalf("%d strays dropped, want all %d", d, silent)
	}
}

// TestFailureAfterFirstHeader: a connection that took part (valid first
// header) and then ends before its EOD still fails the transfer: its
// data are lost.
func TestFailureAfterFirstHeader(t *testing.T) {
	s, r := pairs(t, 1)
	rcv := NewReceiver(&memFile{}, ReceiveConfig{Limit: -1})
	rcv.Add(r[0])
	raw(s[0], Header{Count: 4}, []byte("abcd"))
	s[0].Close()
	_, err := rcv.Wait(ctx(t))
	var de *xfer.DataError
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want a data error", err)
	}
}

// TestStrayWithoutSize: with no size to check against (no ALLO), random
// bytes from a stranger that parse as a huge first block are dropped,
// not taken as a connection that then fails the transfer (CI,
// TestScanOwnHostBrief).
func TestStrayWithoutSize(t *testing.T) {
	s, r := pairs(t, 2)
	var dropped atomic.Int64
	rcv := NewReceiver(&memFile{}, ReceiveConfig{Limit: -1, MaxConns: 1, Dropped: func(net.Conn) { dropped.Add(1) }})
	if !rcv.Add(r[0]) {
		t.Fatal("stray refused as a candidate")
	}
	raw(s[0], Header{Count: 1 << 40, Offset: 12345})
	s[0].Close()
	for k := 0; dropped.Load() == 0; k++ {
		if k > 10000 {
			t.Fatal("the stray was never dropped")
		}
		time.Sleep(time.Millisecond)
	}
	if !rcv.Add(r[1]) {
		t.Fatal("the peer's connection refused after the stray")
	}
	raw(s[1], Header{Count: 2}, []byte("ok"), Header{Desc: DescEOD | DescEOF, Offset: 1})
	if n, err := rcv.Wait(ctx(t)); err != nil || n != 2 {
		t.Fatalf("the transfer: %d bytes, %v", n, err)
	}
}
