package posix

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + i>>12)
	}
	return b
}

// openTest writes data to a fresh root and opens it as a *Reader.
func openTest(t *testing.T, data []byte) *Reader {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	r, err := fsys.Open(t.Context(), "/f")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.(*Reader)
}

// receive reads everything from c until EOF in the background.
func receive(c *net.TCPConn) <-chan []byte {
	ch := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c)
		ch <- b
	}()
	return ch
}

func TestSendfile(t *testing.T) {
	data := pattern(8<<20 + 13) // larger than the socket buffers: EAGAIN happens
	r := openTest(t, data)
	size := int64(len(data))
	ranges := []struct{ off, n int64 }{
		{0, size}, {size / 2, size - size/2}, {123, 1 << 20}, {size - 1, 1}, {4096, 3 << 20},
	}
	var wg sync.WaitGroup
	for i, rg := range ranges {
		snd, rcv := tcpPair(t)
		got := receive(rcv)
		wg.Go(func() {
			var n int64
			var err error
			if i%2 == 0 {
				var handled bool
				n, handled, err = r.sendfile(snd, rg.off, rg.n)
				if !handled {
					t.Errorf("sendfile(%d, %d) not handled", rg.off, rg.n)
				}
			} else {
				n, err = r.WriteRangeTo(snd, rg.off, rg.n)
			}
			snd.CloseWrite()
			if n != rg.n || err != nil {
				t.Errorf("range (%d, %d) = %d, %v", rg.off, rg.n, n, err)
			}
			if b := <-got; !bytes.Equal(b, data[rg.off:rg.off+rg.n]) {
				t.Errorf("range (%d, %d): received %d bytes, wrong data", rg.off, rg.n, len(b))
			}
		})
	}
	wg.Wait()
}

func TestSendfileEdges(t *testing.T) {
	data := pattern(100000)
	r := openTest(t, data)
	size := int64(len(data))
	for _, c := range []struct {
		name      string
		off, n    int64
		want      int64
		wantErr   error
		wantBytes []byte
	}{
		{"zero", 10, 0, 0, nil, nil},
		{"zero at EOF", size, 0, 0, nil, nil},
		{"across EOF", size - 10, 100, 10, io.ErrUnexpectedEOF, data[size-10:]},
		{"past EOF", size + 10, 100, 0, io.ErrUnexpectedEOF, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			snd, rcv := tcpPair(t)
			got := receive(rcv)
			n, err := r.WriteRangeTo(snd, c.off, c.n)
			snd.CloseWrite()
			if n != c.want || !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Errorf("WriteRangeTo(%d, %d) = %d, %v; want %d, %v", c.off, c.n, n, err, c.want, c.wantErr)
			}
			if b := <-got; !bytes.Equal(b, c.wantBytes) {
				t.Errorf("received %d bytes; want %d", len(b), len(c.wantBytes))
			}
		})
	}
	t.Run("peer closed", func(t *testing.T) {
		big := openTest(t, pattern(16<<20))
		snd, rcv := tcpPair(t)
		rcv.Close()
		if _, err := big.WriteRangeTo(snd, 0, 16<<20); err == nil {
			t.Errorf("WriteRangeTo to a closed peer succeeded")
		}
	})
	t.Run("closed reader", func(t *testing.T) {
		closed := openTest(t, data)
		closed.Close()
		snd, _ := tcpPair(t)
		if _, err := closed.WriteRangeTo(snd, 0, 10); err == nil {
			t.Errorf("WriteRangeTo after Close succeeded")
		}
	})
}

// createTest creates an empty file and returns the writer and a function
// reading the file back after the writer is closed.
func createTest(t *testing.T) (*Writer, func() []byte) {
	t.Helper()
	dir := t.TempDir()
	fsys, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	w, err := fsys.Create(t.Context(), "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	return w.(*Writer), func() []byte {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "f"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// send writes b to c in the background and then half-closes it.
func send(c *net.TCPConn, b []byte) {
	go func() {
		c.Write(b)
		c.CloseWrite()
	}()
}

func TestSplice(t *testing.T) {
	data := pattern(8<<20 + 7)
	w, contents := createTest(t)
	size := int64(len(data))
	// Disjoint ranges, concurrently; the last range reads until EOF.
	ranges := []struct{ off, n int64 }{
		{3 << 20, 1 << 20}, {0, 1}, {1, 3<<20 - 1}, {4 << 20, 4 << 20}, {8 << 20, -1},
	}
	var wg sync.WaitGroup
	for i, rg := range ranges {
		snd, rcv := tcpPair(t)
		end := rg.off + rg.n
		if rg.n < 0 {
			end = size
		}
		send(snd, data[rg.off:end])
		wg.Go(func() {
			var n int64
			var err error
			if i%2 == 0 {
				var handled bool
				n, handled, err = w.splice(rcv, rg.off, rg.n)
				if !handled {
					t.Errorf("splice(%d, %d) not handled", rg.off, rg.n)
				}
			} else {
				n, err = w.ReadRangeFrom(rcv, rg.off, rg.n)
			}
			if n != end-rg.off || err != nil {
				t.Errorf("range (%d, %d) = %d, %v; want %d", rg.off, rg.n, n, err, end-rg.off)
			}
		})
	}
	wg.Wait()
	if got := contents(); !bytes.Equal(got, data) {
		t.Errorf("file differs after spliced ranges (%d bytes, want %d)", len(got), len(data))
	}
}

func TestSpliceEdges(t *testing.T) {
	t.Run("zero and exact", func(t *testing.T) {
		w, contents := createTest(t)
		snd, rcv := tcpPair(t)
		send(snd, []byte("0123456789abcdefghij"))
		// n == 0 reads nothing; n == 10 reads exactly 10 and leaves the rest.
		if n, err := w.ReadRangeFrom(rcv, 0, 0); n != 0 || err != nil {
			t.Errorf("ReadRangeFrom(n=0) = %d, %v", n, err)
		}
		if n, err := w.ReadRangeFrom(rcv, 0, 10); n != 10 || err != nil {
			t.Errorf("ReadRangeFrom(n=10) = %d, %v", n, err)
		}
		rest, _ := io.ReadAll(rcv)
		if string(rest) != "abcdefghij" {
			t.Errorf("socket after range: %q; want abcdefghij", rest)
		}
		if got := contents(); string(got) != "0123456789" {
			t.Errorf("file = %q", got)
		}
	})
	t.Run("short", func(t *testing.T) {
		w, contents := createTest(t)
		snd, rcv := tcpPair(t)
		send(snd, []byte("hello"))
		n, err := w.ReadRangeFrom(rcv, 3, 100)
		if n != 5 || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("ReadRangeFrom(short) = %d, %v; want 5, ErrUnexpectedEOF", n, err)
		}
		if got := contents(); string(got) != "\x00\x00\x00hello" {
			t.Errorf("file = %q", got)
		}
	})
	t.Run("past EOF", func(t *testing.T) {
		// A range starting beyond the file's end leaves a hole of zeros.
		w, contents := createTest(t)
		snd, rcv := tcpPair(t)
		send(snd, []byte("tail"))
		if n, err := w.ReadRangeFrom(rcv, 1<<20, -1); n != 4 || err != nil {
			t.Errorf("ReadRangeFrom(past EOF) = %d, %v", n, err)
		}
		got := contents()
		if len(got) != 1<<20+4 || string(got[1<<20:]) != "tail" || !bytes.Equal(got[:1<<20], make([]byte, 1<<20)) {
			t.Errorf("file has %d bytes; want 1 MiB of zeros then tail", len(got))
		}
	})
	t.Run("empty stream", func(t *testing.T) {
		w, contents := createTest(t)
		snd, rcv := tcpPair(t)
		send(snd, nil)
		if n, err := w.ReadRangeFrom(rcv, 0, -1); n != 0 || err != nil {
			t.Errorf("ReadRangeFrom(empty, -1) = %d, %v", n, err)
		}
		if got := contents(); len(got) != 0 {
			t.Errorf("file = %q", got)
		}
	})
	t.Run("reset", func(t *testing.T) {
		w, _ := createTest(t)
		snd, rcv := tcpPair(t)
		snd.SetLinger(0)
		snd.Write([]byte("abc"))
		snd.Close() // RST
		if _, err := w.ReadRangeFrom(rcv, 0, 1<<20); err == nil {
			t.Errorf("ReadRangeFrom after reset succeeded")
		}
	})
}
