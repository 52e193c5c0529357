package progress

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newFake(o Options) (*Display, *clock) {
	c := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	o.Now = c.now
	return New(o), c
}

func TestFrameGolden(t *testing.T) {
	d, c := newFake(Options{Streams: true, Width: func() int { return 72 }})
	d.AddTotal(3, 10<<20)
	d.FileStarted("small.txt", 1<<20)
	d.FileStarted("a very long directory name/and an even longer file name.bin", 8<<20)
	d.FileStreams("a very long directory name/and an even longer file name.bin", []int64{0, 0})
	d.Frame(c.now())
	c.advance(time.Second)
	d.FileProgress("small.txt", 1<<20)
	d.FileDone("small.txt", 1<<20, nil)
	d.FileProgress("a very long directory name/and an even longer file name.bin", 3<<20)
	d.FileStreams("a very long directory name/and an even longer file name.bin", []int64{2 << 20, 1 << 20})
	got := strings.Join(d.Frame(c.now()), "\n")
	want := strings.Join([]string{
		"[1/3 files] 4.00 MiB / 10.0 MiB  40%  4.00 MiB/s  ETA 0:02  0:01",
		"   37% 3.00 MiB / 8.00 MiB  3.00 MiB/s  a very long dir…r file name.bin",
		"      stream  0  2.00 MiB  2.00 MiB/s",
		"      stream  1  1.00 MiB  1.00 MiB/s",
	}, "\n")
	if got != want {
		t.Errorf("frame:\n%s\nwant:\n%s", got, want)
	}
	for _, l := range strings.Split(got, "\n") {
		if n := len([]rune(l)); n > 71 {
			t.Errorf("line of %d runes for width 72: %q", n, l)
		}
	}
	// A failed file is counted; the rate looks back 3 seconds at most.
	c.advance(time.Second)
	d.FileDone("a very long directory name/and an even longer file name.bin", 3<<20, errors.New("550"))
	c.advance(4 * time.Second)
	got = strings.Join(d.Frame(c.now()), "\n")
	if want := "[2/3 files] 4.00 MiB / 10.0 MiB  40%  0 B/s  0:06  1 failed"; got != want {
		t.Errorf("frame %q, want %q", got, want)
	}
	if s, want := d.SummaryLine(), "2 files (1 failed), 4.00 MiB in 0:06 (683 KiB/s)"; s != want {
		t.Errorf("summary %q, want %q", s, want)
	}
}

func TestFrameUnknownSizes(t *testing.T) {
	d, c := newFake(Options{})
	d.FileStarted("", -1)
	d.FileStreams("", []int64{5})
	d.Frame(c.now())
	c.advance(2 * time.Second)
	d.FileProgress("", 3000)
	got := d.Frame(c.now())
	want := []string{"2.93 KiB  1.46 KiB/s  0:02", "  2.93 KiB  1.46 KiB/s  transfer"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("frame %q, want %q", got, want)
	}
	// Many files in flight are summed up.
	for i := range maxFiles + 3 {
		d.FileStarted(fmt.Sprint("f", i), 10)
	}
	if got := d.Frame(c.now()); len(got) != 2+maxFiles || got[len(got)-1] != "  … and 4 more" {
		t.Errorf("frame with many files: %q", got)
	}
}

func TestLiveRedraw(t *testing.T) {
	var out bytes.Buffer
	d, c := newFake(Options{Out: &out, Live: true, Streams: true, Clear: true})
	d.FileStarted("x", 100)
	d.FileStreams("x", []int64{1, 2})
	d.draw(false)
	first := out.String()
	if !strings.HasPrefix(first, "\r") || strings.Count(first, "\x1b[K\r\n") != 4 || strings.Contains(first, "\x1b[4A") {
		t.Errorf("first frame %q", first)
	}
	out.Reset()
	c.advance(time.Second)
	d.FileDone("x", 100, nil)
	d.draw(false)
	// Back over the four lines, one line now, the rest cleared.
	if got := out.String(); !strings.HasPrefix(got, "\x1b[4A\r[1 done] 100 B") || !strings.HasSuffix(got, "\x1b[K\r\n\x1b[J") {
		t.Errorf("second frame %q", got)
	}
	out.Reset()
	d.Close()
	if got := out.String(); got != "\x1b[1A\r\x1b[J" {
		t.Errorf("close with Clear: %q", got)
	}
}

func TestQuietOffTerminal(t *testing.T) {
	var out bytes.Buffer
	d, c := newFake(Options{Out: &out})
	d.Start()
	d.FileStarted("a", 5)
	c.advance(time.Second)
	d.FileDone("a", 5, nil)
	d.Close()
	if out.Len() != 0 {
		t.Errorf("wrote %q off a terminal", out.String())
	}
	d, _ = newFake(Options{Out: &out, Summary: true})
	d.FileStarted("a", 5)
	d.FileDone("a", 5, nil)
	d.Close()
	d.Close()
	if out.String() != "1 file, 5 B in 0:00 (4.88 KiB/s)\n" {
		t.Errorf("summary %q", out.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestConcurrent runs the renderer while many goroutines report (run it
// with -race).
func TestConcurrent(t *testing.T) {
	var out lockedBuffer
	d := New(Options{Out: &out, Live: true, Streams: true, Summary: true})
	d.Start()
	const workers, files = 8, 50
	d.AddTotal(workers*files, workers*files*1000)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range files {
				name := fmt.Sprintf("w%d/f%d", w, i)
				d.FileStarted(name, 1000)
				for b := int64(0); b <= 1000; b += 250 {
					d.FileProgress(name, b)
					d.FileStreams(name, []int64{b / 2, b - b/2})
				}
				var err error
				if i%10 == 0 {
					err = errors.New("failed")
				}
				d.FileDone(name, 1000, err)
				if i%10 == 5 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	time.Sleep(300 * time.Millisecond) // at least one frame
	d.Close()
	out.mu.Lock()
	defer out.mu.Unlock()
	s := out.b.String()
	if !strings.Contains(s, "[400/400 files]") || !strings.HasSuffix(s, "400 files (40 failed), 391 KiB in 0:00 ("+strings.SplitAfter(s, "391 KiB in 0:00 (")[1]) {
		t.Errorf("output ends %q", s[max(len(s)-300, 0):])
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		n    float64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.00 KiB"}, {1536, "1.50 KiB"},
		{50 << 20, "50.0 MiB"}, {500 << 20, "500 MiB"}, {3 << 30, "3.00 GiB"}, {5 << 40, "5.00 TiB"},
	} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%v) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0:00"}, {59 * time.Second, "0:59"}, {61 * time.Second, "1:01"}, {3723 * time.Second, "1:02:03"}, {-time.Second, "0:00"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
