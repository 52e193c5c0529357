// Package progress shows the live progress of file transfers on a
// terminal: a block of lines redrawn in place at most four times a second
// with the overall state (files done of total, bytes, rate, ETA), the
// files in flight (name, percent, rate) and optionally each data stream of
// a file (bytes, rate), whichever way the data flows.
//
// The transfer side only stores numbers: FileProgress and FileStreams are
// an atomic store after a lock-free map lookup, and they are called from
// the transfers' progress callbacks, never per block. A goroutine of its
// own reads the numbers and draws. Off a terminal the Display stays quiet
// and at most prints a summary line when closed.
//
// The package also holds the project's one set of byte and rate
// formatters (units.go): Bytes, Size, LinkRate and Rate. They live here,
// beside the progress lines that were their first user, so that the CLI's
// summaries and the benchmark reports render sizes and rates the same way
// without a package of their own.
package progress

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// DefaultInterval is the redraw period: four frames a second at most.
const DefaultInterval = 250 * time.Millisecond

// maxFiles bounds the file lines of a frame; more files in flight are
// summed up in one line.
const maxFiles = 8

// Options configure a Display.
type Options struct {
	// Out receives the frames (and the summary).
	Out io.Writer
	// Live draws frames in place with VT100 sequences: Out is a terminal.
	Live bool
	// Width returns the terminal's width in columns; nil or less than 20
	// means 80. Lines are cut to fit.
	Width func() int
	// Streams adds a line per data stream of each file (-vb).
	Streams bool
	// Summary prints one line when the Display is closed: files, bytes,
	// time and rate.
	Summary bool
	// Clear erases the last frame when the Display is closed, instead of
	// leaving it on the screen.
	Clear bool
	// Interval is the redraw period; zero means DefaultInterval, and it is
	// never below DefaultInterval.
	Interval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Display is the live progress of a set of transfers. Its methods are
// safe for concurrent use.
type Display struct {
	o     Options
	start time.Time

	totalFiles atomic.Int64
	totalBytes atomic.Int64 // -1: unknown
	doneFiles  atomic.Int64
	failed     atomic.Int64
	doneBytes  atomic.Int64 // bytes of the files that ended
	seq        atomic.Int64
	files      sync.Map // name → *file, the files in flight

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once

	// The renderer's own state: touched only by the drawing goroutine,
	// and by Close after it stopped.
	lines   int // lines of the last frame on the screen
	overall meter
	meters  map[*file]*fileMeters
	drawMu  sync.Mutex // serializes drawing between the goroutine and Close
}

// file is one file in flight.
type file struct {
	name    string
	size    int64 // -1: unknown
	order   int64
	started time.Time
	bytes   atomic.Int64
	streams atomic.Pointer[[]int64]
}

// fileMeters are the rate meters of a file and its streams.
type fileMeters struct {
	file    meter
	streams []meter
}

// New returns a Display; Start begins drawing.
func New(o Options) *Display {
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Interval = max(o.Interval, DefaultInterval)
	d := &Display{o: o, start: o.Now(), stop: make(chan struct{}), meters: map[*file]*fileMeters{}}
	d.totalBytes.Store(-1)
	d.overall.origin = d.start
	return d
}

// Start begins redrawing in a goroutine of its own when the Display is
// live; Close ends it.
func (d *Display) Start() {
	if !d.o.Live {
		return
	}
	d.wg.Go(func() {
		t := time.NewTicker(d.o.Interval)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
				d.draw(false)
			}
		}
	})
}

// AddTotal announces files more files and bytes more bytes to transfer
// (bytes < 0: sizes unknown), for the files-of-total count and the ETA.
func (d *Display) AddTotal(files, bytes int64) {
	d.totalFiles.Add(files)
	if bytes < 0 {
		return
	}
	for {
		old := d.totalBytes.Load()
		if d.totalBytes.CompareAndSwap(old, max(old, 0)+bytes) {
			return
		}
	}
}

// FileStarted says a file's transfer began; size < 0 means unknown. name
// identifies the file in the other calls and is what the display shows.
func (d *Display) FileStarted(name string, size int64) {
	f := &file{name: name, size: size, order: d.seq.Add(1), started: d.o.Now()}
	d.files.Store(name, f)
}

// FileProgress sets the bytes a file has moved so far.
func (d *Display) FileProgress(name string, bytes int64) {
	if v, ok := d.files.Load(name); ok {
		v.(*file).bytes.Store(bytes)
	}
}

// FileStreams sets the bytes each data stream of a file has moved. The
// slice is kept: the caller must not change it afterwards.
func (d *Display) FileStreams(name string, streams []int64) {
	if v, ok := d.files.Load(name); ok {
		v.(*file).streams.Store(&streams)
	}
}

// FileDone says a file's transfer ended after moving bytes, with err nil
// on success.
func (d *Display) FileDone(name string, bytes int64, err error) {
	d.files.Delete(name)
	d.doneBytes.Add(bytes)
	d.doneFiles.Add(1)
	if err != nil {
		d.failed.Add(1)
	}
}

// Close stops drawing. A live display draws its last frame (or erases it
// with Clear); with Summary a line sums the transfers up.
func (d *Display) Close() {
	d.once.Do(func() {
		close(d.stop)
		d.wg.Wait()
		if d.o.Live {
			d.draw(true)
		}
		if d.o.Summary {
			fmt.Fprintln(d.o.Out, d.SummaryLine())
		}
	})
}

// SummaryLine is "N files (K failed), BYTES in TIME (RATE/s)".
func (d *Display) SummaryLine() string {
	el := d.o.Now().Sub(d.start)
	n, failed, b := d.doneFiles.Load(), d.failed.Load(), d.doneBytes.Load()
	var s strings.Builder
	fmt.Fprintf(&s, "%d file", n)
	if n != 1 {
		s.WriteString("s")
	}
	if failed > 0 {
		fmt.Fprintf(&s, " (%d failed)", failed)
	}
	fmt.Fprintf(&s, ", %s in %s (%s/s)", Bytes(float64(b)), Duration(el), Bytes(float64(b)/max(el.Seconds(), 1e-3)))
	return s.String()
}

// draw renders and writes one frame.
func (d *Display) draw(final bool) {
	d.drawMu.Lock()
	defer d.drawMu.Unlock()
	lines := d.frame(d.o.Now())
	var b strings.Builder
	if d.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", d.lines)
	}
	b.WriteString("\r")
	if final && d.o.Clear {
		b.WriteString("\x1b[J")
		d.lines = 0
	} else {
		for _, l := range lines {
			b.WriteString(l)
			b.WriteString("\x1b[K\r\n")
		}
		b.WriteString("\x1b[J")
		d.lines = len(lines)
	}
	io.WriteString(d.o.Out, b.String())
}

// Frame returns the lines of the frame at now, each cut to the width. It
// advances the rate meters as drawing does.
func (d *Display) Frame(now time.Time) []string {
	d.drawMu.Lock()
	defer d.drawMu.Unlock()
	return d.frame(now)
}

func (d *Display) frame(now time.Time) []string {
	var active []*file
	var inFlight int64
	d.files.Range(func(_, v any) bool {
		f := v.(*file)
		active = append(active, f)
		inFlight += f.bytes.Load()
		return true
	})
	slices.SortFunc(active, func(a, b *file) int { return int(a.order - b.order) })
	// Forget the meters of files that ended.
	for f := range d.meters {
		if !slices.Contains(active, f) {
			delete(d.meters, f)
		}
	}

	total := d.doneBytes.Load() + inFlight
	d.overall.add(now, total)
	rate := d.overall.rate()
	elapsed := now.Sub(d.start)

	var lines []string
	var head strings.Builder
	tf, done := d.totalFiles.Load(), d.doneFiles.Load()
	if tf > 0 {
		fmt.Fprintf(&head, "[%d/%d files] ", done, tf)
	} else if done > 0 {
		fmt.Fprintf(&head, "[%d done] ", done)
	}
	if tb := d.totalBytes.Load(); tb > 0 {
		fmt.Fprintf(&head, "%s / %s %3d%%  %s/s", Bytes(float64(total)), Bytes(float64(tb)), percent(total, tb), Bytes(rate))
		if rate > 0 && total < tb {
			fmt.Fprintf(&head, "  ETA %s", Duration(time.Duration(float64(tb-total)/rate*float64(time.Second))))
		}
	} else {
		fmt.Fprintf(&head, "%s  %s/s", Bytes(float64(total)), Bytes(rate))
	}
	fmt.Fprintf(&head, "  %s", Duration(elapsed))
	if n := d.failed.Load(); n > 0 {
		fmt.Fprintf(&head, "  %d failed", n)
	}
	lines = append(lines, head.String())

	for i, f := range active {
		if i == maxFiles {
			lines = append(lines, fmt.Sprintf("  … and %d more", len(active)-maxFiles))
			break
		}
		m := d.meters[f]
		if m == nil {
			m = &fileMeters{file: meter{origin: f.started}}
			d.meters[f] = m
		}
		n := f.bytes.Load()
		m.file.add(now, n)
		var l strings.Builder
		name := Printable(f.name)
		if name == "" {
			name = "transfer"
		}
		if f.size >= 0 {
			fmt.Fprintf(&l, "  %3d%% %s / %s  %s/s  ", percent(n, f.size), Bytes(float64(n)), Bytes(float64(f.size)), Bytes(m.file.rate()))
		} else {
			fmt.Fprintf(&l, "  %s  %s/s  ", Bytes(float64(n)), Bytes(m.file.rate()))
		}
		lines = append(lines, l.String()+middle(name, d.width()-1-utf8.RuneCountInString(l.String())))
		if !d.o.Streams {
			continue
		}
		sp := f.streams.Load()
		if sp == nil {
			continue
		}
		streams := *sp
		if len(m.streams) != len(streams) {
			m.streams = make([]meter, len(streams))
			for j := range m.streams {
				m.streams[j].origin = f.started
			}
		}
		for j, sb := range streams {
			m.streams[j].add(now, sb)
			lines = append(lines, fmt.Sprintf("      stream %2d  %s  %s/s", j, Bytes(float64(sb)), Bytes(m.streams[j].rate())))
		}
	}
	w := d.width() - 1
	for i, l := range lines {
		lines[i] = cut(l, w)
	}
	return lines
}

func (d *Display) width() int {
	if d.o.Width != nil {
		if w := d.o.Width(); w >= 20 {
			return w
		}
	}
	return 80
}

func percent(n, of int64) int {
	if of <= 0 {
		return 100
	}
	return int(min(n, of) * 100 / of)
}

// cut shortens s to w runes.
func cut(s string, w int) string {
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	r := []rune(s)
	return string(r[:max(w, 0)])
}

// middle shortens s to w runes by dropping its middle, where file names
// carry the least.
func middle(s string, w int) string {
	r := []rune(s)
	if len(r) <= w {
		return s
	}
	if w < 5 {
		return string(r[:max(w, 0)])
	}
	left := (w - 1) / 2
	right := w - 1 - left
	return string(r[:left]) + "…" + string(r[len(r)-right:])
}

// meter measures a rate over the last few seconds of samples.
type meter struct {
	samples [16]sample
	n, next int
	// origin is when the counter was zero: with a single sample the rate
	// is the average since then.
	origin time.Time
}

type sample struct {
	t time.Time
	b int64
}

// rateWindow is how far back the rate looks.
const rateWindow = 3 * time.Second

func (m *meter) add(t time.Time, b int64) {
	if m.n > 0 {
		last := m.samples[(m.next+len(m.samples)-1)%len(m.samples)]
		if b < last.b {
			// The counter restarted (a retry): start measuring afresh.
			m.n, m.origin = 0, last.t
		}
	}
	m.samples[m.next] = sample{t, b}
	m.next = (m.next + 1) % len(m.samples)
	m.n = min(m.n+1, len(m.samples))
}

// rate is the bytes per second between the newest sample and the oldest
// one inside the window (or the one just before it).
func (m *meter) rate() float64 {
	if m.n == 0 {
		return 0
	}
	newest := m.samples[(m.next+len(m.samples)-1)%len(m.samples)]
	if m.n == 1 {
		if dt := newest.t.Sub(m.origin).Seconds(); !m.origin.IsZero() && dt > 0 {
			return float64(newest.b) / dt
		}
		return 0
	}
	oldest := newest
	for i := 2; i <= m.n; i++ {
		s := m.samples[(m.next+len(m.samples)-i)%len(m.samples)]
		oldest = s
		if newest.t.Sub(s.t) >= rateWindow {
			break
		}
	}
	dt := newest.t.Sub(oldest.t).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(newest.b-oldest.b) / dt
}

// Duration formats a duration as M:SS or H:MM:SS.
func Duration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 0 {
		s = 0
	}
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
