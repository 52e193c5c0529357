package posix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSpliceAtSocket: from a TCP connection SpliceAt moves the bytes with
// splice(2) (SplicedBytes grows by them), in pieces at several offsets.
func TestSpliceAtSocket(t *testing.T) {
	snd, rcv := tcpPair(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := pattern(5<<20 + 3)
	go func() {
		snd.Write(data)
		snd.CloseWrite()
	}()
	before := SplicedBytes()
	half := int64(len(data) / 2)
	rest := int64(len(data)) - half
	// The stream's first half goes to the end of the file: offsets are
	// explicit.
	if n, err := SpliceAt(f, rcv, rest, half); n != half || err != nil {
		t.Fatalf("SpliceAt(first piece) = %d, %v", n, err)
	}
	if n, err := SpliceAt(f, rcv, 0, -1); n != rest || err != nil {
		t.Fatalf("SpliceAt(to EOF) = %d, %v", n, err)
	}
	if d := SplicedBytes() - before; d < int64(len(data)) {
		t.Errorf("SplicedBytes grew by %d, want at least %d", d, len(data))
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got[rest:], data[:half]) || !bytes.Equal(got[:rest], data[half:]) {
		t.Error("contents differ")
	}
}

// TestSpliceAtSocketShort: a socket that ends early gives
// io.ErrUnexpectedEOF after storing what came.
func TestSpliceAtSocketShort(t *testing.T) {
	snd, rcv := tcpPair(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snd.Write([]byte("hello"))
	snd.CloseWrite()
	if n, err := SpliceAt(f, rcv, 2, 10); n != 5 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("SpliceAt = %d, %v; want 5, ErrUnexpectedEOF", n, err)
	}
	if got, _ := os.ReadFile(f.Name()); string(got) != "\x00\x00hello" {
		t.Errorf("file = %q", got)
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestSplicePipesReused: block after block, SpliceAt reuses its idle pipe
// instead of making one per call; a splice that fails half-way (its pipe
// may hold bytes) closes its pipe rather than keeping it. Either way
// the bytes land where they belong.
func TestSplicePipesReused(t *testing.T) {
	snd, rcv := tcpPair(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const blocks, block = 200, 64 << 10
	data := pattern(blocks * block)
	go func() {
		snd.Write(data)
		snd.Write([]byte("tail"))
		snd.CloseWrite()
	}()
	// Warm up: the first call may have to make a pipe.
	if n, err := SpliceAt(f, rcv, 0, block); n != block || err != nil {
		t.Fatalf("SpliceAt(block 0) = %d, %v", n, err)
	}
	base, made := openFDs(t), pipesMade.Load()
	for i := 1; i < blocks; i++ {
		if n, err := SpliceAt(f, rcv, int64(i)*block, block); n != block || err != nil {
			t.Fatalf("SpliceAt(block %d) = %d, %v", i, n, err)
		}
	}
	if got := openFDs(t); got > base {
		t.Errorf("%d descriptors open after %d blocks, %d after the first: pipes leak", got, blocks, base)
	}
	if n := pipesMade.Load() - made; n != 0 {
		t.Errorf("%d pipes made for %d blocks after the first, want none (reused)", n, blocks-1)
	}
	// The stream ends 4 bytes into a block of 10: the call fails.
	if n, err := SpliceAt(f, rcv, int64(len(data)), 10); n != 4 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("SpliceAt(short) = %d, %v; want 4, ErrUnexpectedEOF", n, err)
	}
	if got := openFDs(t); got > base {
		t.Errorf("%d descriptors open after a failed splice, want at most %d", got, base)
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got[:len(data)], data) || string(got[len(data):]) != "tail" {
		t.Error("contents differ")
	}
}

// rcvLowatOf reads the socket's SO_RCVLOWAT.
func rcvLowatOf(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

// TestSpliceLowWatermark: while a large range trickles in, SpliceAt waits
// for batches (SO_RCVLOWAT), yet a block whose tail is smaller than the
// batch, on a connection the sender keeps open (a MODE E connection
// cached for the next transfer), still completes; the socket is left
// with a mark of 1 for whatever reads it next.
func TestSpliceLowWatermark(t *testing.T) {
	snd, rcv := tcpPair(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const n = rcvLowat + rcvLowat/2 + 17
	data := pattern(n)
	go func() {
		// In small pieces with pauses, so that the reader waits often.
		for b := data; len(b) > 0; {
			k := min(len(b), 8<<10)
			if _, err := snd.Write(b[:k]); err != nil {
				return
			}
			b = b[k:]
			time.Sleep(time.Millisecond)
		}
		// No close: the connection stays open after the block.
	}()
	res := make(chan error, 1)
	go func() {
		m, err := SpliceAt(f, rcv, 0, n)
		if err == nil && m != n {
			err = fmt.Errorf("moved %d bytes, want %d", m, n)
		}
		res <- err
	}()
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("SpliceAt still waiting a minute after the block's last byte was sent")
	}
	if v := rcvLowatOf(t, rcv); v != 1 {
		t.Errorf("SO_RCVLOWAT left at %d, want 1", v)
	}
	if got, _ := os.ReadFile(f.Name()); !bytes.Equal(got, data) {
		t.Error("contents differ")
	}
	// To the end of a stream: the end wakes the reader whatever the mark.
	go func() {
		snd.Write(data[:1000])
		snd.CloseWrite()
	}()
	if m, err := SpliceAt(f, rcv, 0, -1); m != 1000 || err != nil {
		t.Fatalf("SpliceAt(to EOF) = %d, %v; want 1000, nil", m, err)
	}
}
