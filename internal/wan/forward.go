package wan

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// maxRead is the most one TUN read returns: the virtio_net_hdr and a 64 KB
// GSO super-packet.
const maxRead = vnetHdrLen + 65536

// rtPriority is the SCHED_FIFO priority of the forwarder's threads, as with
// "chrt -f 50": above every ordinary process, so that a busy sender or
// receiver cannot hold a packet past its release time.
const rtPriority = 50

// clock reads CLOCK_MONOTONIC through Go's vDSO clock: Go's monotonic
// readings are CLOCK_MONOTONIC, offset by a base measured once.
type clock struct {
	base     time.Time
	baseMono int64
}

func newClock() clock {
	t0 := time.Now()
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	t1 := time.Now()
	mid := t0.Add(t1.Sub(t0) / 2)
	return clock{base: mid, baseMono: ts.Nano()}
}

func (c clock) now() int64 { return c.baseMono + int64(time.Since(c.base)) }

// sleepUntil sleeps until the CLOCK_MONOTONIC time t (nanoseconds).
func sleepUntil(t int64) {
	ts := unix.NsecToTimespec(t)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}

// item is one packet (perhaps a GSO super-packet) waiting in a direction's
// ring for its release time.
type item struct {
	pos   uint64 // absolute ring position of its virtio_net_hdr
	n     int32  // bytes in the ring, header included
	drops int32  // segments dropped on purpose
	due   int64  // CLOCK_MONOTONIC release time
	mask  [4]uint64
	more  []uint64 // drop bits beyond 256 segments (rare: MSS < 256 bytes)
}

func (it *item) dropped(i int) bool {
	if i < 256 {
		return it.mask[i/64]&(1<<(i%64)) != 0
	}
	i -= 256
	return it.more[i/64]&(1<<(i%64)) != 0
}

func (it *item) drop(i, nseg int) {
	it.drops++
	if i < 256 {
		it.mask[i/64] |= 1 << (i % 64)
		return
	}
	if it.more == nil {
		it.more = make([]uint64, (nseg-256+63)/64)
	}
	i -= 256
	it.more[i/64] |= 1 << (i % 64)
}

// direction is one way through the forwarder: packets read from in wait in
// ring, in arrival order, until they are written to out. The reader owns
// tail; the releaser advances freed.
type direction struct {
	dir     Dir
	in, out int
	delay   atomic.Int64 // ns; Start may shorten it to calibrate
	lossy   bool
	loss    float64
	rng     *rand.Rand
	ring    []byte
	tail    uint64
	freed   atomic.Uint64
	queue   queue
	scratch []byte

	packets, bytes, lossDrops, queueDrops, writeErrors atomic.Uint64
	hist                                               histogram
	err                                                error // the reader's fatal error; read after it ends
}

// reserve returns where the next read goes: maxRead contiguous bytes at the
// ring's tail, or the scratch buffer (ok false) if the ring is full.
func (d *direction) reserve() (buf []byte, pos uint64, ok bool) {
	size := uint64(len(d.ring))
	pos = d.tail
	off := pos % size
	if size-off < maxRead {
		pos += size - off
		off = 0
	}
	if pos+maxRead-d.freed.Load() > size {
		return d.scratch, 0, false
	}
	return d.ring[off : off+maxRead], pos, true
}

// queue is a bounded single-producer single-consumer FIFO of items. The
// consumer, a locked real-time thread, sleeps in the kernel on an eventfd
// when it is empty, so that the producer wakes it directly rather than
// through the Go scheduler's hand-off to a locked thread, which costs
// hundreds of microseconds on a busy machine.
type queue struct {
	items      []item
	head, tail atomic.Uint64 // consumer's and producer's positions
	sleeping   atomic.Bool
	closed     atomic.Bool
	wakefd     int
}

func (q *queue) init(size int) error {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("wan: eventfd: %w", err)
	}
	q.items, q.wakefd = make([]item, size), fd
	return nil
}

var eventfdOne = []byte{1, 0, 0, 0, 0, 0, 0, 0}

// push appends it, reporting false if the queue is full.
func (q *queue) push(it item) bool {
	t := q.tail.Load()
	if t-q.head.Load() == uint64(len(q.items)) {
		return false
	}
	q.items[t%uint64(len(q.items))] = it
	q.tail.Store(t + 1)
	if q.sleeping.Load() {
		unix.Write(q.wakefd, eventfdOne)
	}
	return true
}

// close tells the consumer that nothing more will come.
func (q *queue) close() {
	q.closed.Store(true)
	unix.Write(q.wakefd, eventfdOne)
}

// pop returns the oldest item, waiting for one; ok is false once the queue
// is closed and empty.
func (q *queue) pop() (it item, ok bool) {
	var buf [8]byte
	for {
		h := q.head.Load()
		if h != q.tail.Load() {
			it = q.items[h%uint64(len(q.items))]
			q.head.Store(h + 1)
			return it, true
		}
		if q.closed.Load() {
			return it, false
		}
		// Announce the sleep, then look again: a push after the first
		// look sees sleeping and writes the eventfd.
		q.sleeping.Store(true)
		if q.tail.Load() == h && !q.closed.Load() {
			unix.Read(q.wakefd, buf[:])
		}
		q.sleeping.Store(false)
	}
}

func (f *forwarder) closeQueues() {
	for _, d := range f.dirs {
		if d != nil && d.queue.items != nil {
			unix.Close(d.queue.wakefd)
			d.queue.items = nil
		}
	}
}

// forwarder moves packets between the two TUNs with a fixed delay and
// seeded loss. It runs four goroutines, each locked to its own OS thread
// at real-time priority where permitted: a reader and a releaser per
// direction.
type forwarder struct {
	dirs     [2]*direction
	clk      clock
	stopfd   int
	stopping atomic.Bool
	lossOn   atomic.Bool
	realtime atomic.Int32 // threads that got SCHED_FIFO
	wg       sync.WaitGroup

	mu      sync.Mutex
	threads []*threadCPU
}

// newForwarder prepares a forwarder between the client TUN cfd and the
// server TUN sfd; start runs it.
func newForwarder(cfg Config, cfd, sfd int) (*forwarder, error) {
	stopfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("wan: eventfd: %w", err)
	}
	f := &forwarder{clk: newClock(), stopfd: stopfd}
	// The ring holds what is in flight for one delay at up to 10 Gbit/s
	// (the forwarder's unlimited ceiling is below that), plus slack. Pages
	// are touched only as the ring fills.
	ringSize := int(min(max(cfg.Delay.Seconds()*10e9/8*1.5, 0)+16<<20, 1<<30))
	for d, io := range [2][2]int{ToClient: {sfd, cfd}, ToServer: {cfd, sfd}} {
		dir := Dir(d)
		f.dirs[d] = &direction{
			dir:     dir,
			in:      io[0],
			out:     io[1],
			lossy:   cfg.lossy(dir),
			loss:    cfg.Loss,
			rng:     rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(d)+1)),
			ring:    make([]byte, ringSize),
			scratch: make([]byte, maxRead),
		}
		f.dirs[d].delay.Store(int64(cfg.Delay))
		if err := f.dirs[d].queue.init(1 << 16); err != nil {
			f.closeQueues()
			unix.Close(stopfd)
			return nil, err
		}
	}
	return f, nil
}

func (f *forwarder) start() {
	for _, d := range f.dirs {
		f.wg.Add(2)
		go f.read(d)
		go f.release(d)
	}
}

// stop ends the forwarder's goroutines; packets still waiting are dropped.
func (f *forwarder) stop() error {
	if f.stopping.Swap(true) {
		return nil
	}
	unix.Write(f.stopfd, eventfdOne)
	f.wg.Wait()
	unix.Close(f.stopfd)
	f.closeQueues()
	return errors.Join(f.dirs[0].err, f.dirs[1].err)
}

// resetStats forgets what the set-up probes counted.
func (f *forwarder) resetStats() {
	for _, d := range f.dirs {
		d.packets.Store(0)
		d.bytes.Store(0)
		d.lossDrops.Store(0)
		d.queueDrops.Store(0)
		d.writeErrors.Store(0)
		d.hist.reset()
	}
}

// lockThread pins the calling goroutine to its OS thread for good (the
// thread dies with it, so its real-time priority never leaks to other
// goroutines) and records the thread for CPU accounting.
func (f *forwarder) lockThread() *threadCPU {
	runtime.LockOSThread()
	err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: rtPriority}, 0)
	if err == nil {
		f.realtime.Add(1)
	}
	t := &threadCPU{tid: unix.Gettid()}
	f.mu.Lock()
	f.threads = append(f.threads, t)
	f.mu.Unlock()
	return t
}

func (f *forwarder) read(d *direction) {
	defer f.wg.Done()
	defer d.queue.close()
	t := f.lockThread()
	defer t.finish()
	pfd := []unix.PollFd{{Fd: int32(d.in), Events: unix.POLLIN}, {Fd: int32(f.stopfd), Events: unix.POLLIN}}
	for !f.stopping.Load() {
		buf, pos, ok := d.reserve()
		n, err := unix.Read(d.in, buf)
		switch {
		case err == unix.EAGAIN:
			if _, err := unix.Poll(pfd, -1); err != nil && err != unix.EINTR {
				d.err = fmt.Errorf("wan: poll: %w", err)
				return
			}
			continue
		case err == unix.EINTR:
			continue
		case err != nil:
			if !f.stopping.Load() {
				d.err = fmt.Errorf("wan: reading TUN: %w", err)
			}
			return
		}
		now := f.clk.now()
		p, perr := parseSuperPacket(buf[:n])
		nseg := 1
		if perr == nil {
			nseg = p.nseg
		}
		it := item{pos: pos, n: int32(n), due: now + d.delay.Load()}
		if d.lossy && f.lossOn.Load() {
			for i := range nseg {
				if d.rng.Float64() < d.loss {
					it.drop(i, nseg)
				}
			}
			d.lossDrops.Add(uint64(it.drops))
			if int(it.drops) == nseg {
				continue
			}
		}
		if !ok {
			d.queueDrops.Add(uint64(nseg) - uint64(it.drops))
			continue
		}
		if d.queue.push(it) {
			d.tail = pos + uint64(n+63)&^63
		} else {
			d.queueDrops.Add(uint64(nseg) - uint64(it.drops))
		}
	}
}

func (f *forwarder) release(d *direction) {
	defer f.wg.Done()
	t := f.lockThread()
	defer t.finish()
	seg := make([]byte, maxRead)
	size := uint64(len(d.ring))
	for {
		it, ok := d.queue.pop()
		if !ok {
			return
		}
		if f.stopping.Load() {
			continue // drain without waiting
		}
		if it.due > f.clk.now() {
			sleepUntil(it.due)
		}
		off := it.pos % size
		b := d.ring[off : off+uint64(it.n)]
		p, perr := parseSuperPacket(b)
		if perr != nil || it.drops == 0 {
			// Whole: a plain packet, or a super-packet that lost no
			// segment, goes out as it came, GSO header and all, so the
			// receiver's stack takes it in one piece as if from GRO.
			nseg, wire := 1, len(b)-vnetHdrLen
			if perr == nil && p.gso() {
				nseg = p.nseg
				wire += (nseg - 1) * (p.ipLen + p.l4Len)
			}
			d.hist.add(f.clk.now()-it.due, uint64(nseg))
			f.write(d, b, nseg, wire)
		} else {
			// Some segments were lost: the rest go out one by one as the
			// sender's GSO would have cut them, with fresh checksums.
			clear(seg[:vnetHdrLen])
			for i := range p.nseg {
				if it.dropped(i) {
					continue
				}
				n := p.segment(seg[vnetHdrLen:], i)
				d.hist.add(f.clk.now()-it.due, 1)
				f.write(d, seg[:vnetHdrLen+n], 1, n)
			}
		}
		d.freed.Store(it.pos + uint64(it.n))
	}
}

func (f *forwarder) write(d *direction, b []byte, nseg, wire int) {
	for {
		_, err := unix.Write(d.out, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			d.writeErrors.Add(uint64(nseg))
			return
		}
		d.packets.Add(uint64(nseg))
		d.bytes.Add(uint64(wire))
		return
	}
}

// cpu is the CPU time the forwarder's threads have used so far.
func (f *forwarder) cpu() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var total time.Duration
	for _, t := range f.threads {
		total += t.used()
	}
	return total
}

// threadCPU tracks one forwarder thread's CPU time: live from
// /proc/self/task/TID/schedstat, and as measured by the thread itself when
// it ends.
type threadCPU struct {
	tid   int
	done  atomic.Bool
	final atomic.Int64
}

func (t *threadCPU) finish() {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) == nil {
		t.final.Store(ts.Nano())
	}
	t.done.Store(true)
}

func (t *threadCPU) used() time.Duration {
	if t.done.Load() {
		return time.Duration(t.final.Load())
	}
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(t.tid) + "/schedstat")
	if err != nil {
		return time.Duration(t.final.Load())
	}
	ns, _ := strconv.ParseInt(strings.Fields(string(b) + " 0")[0], 10, 64)
	return time.Duration(ns)
}

// histogram counts release-time errors in microsecond buckets up to
// histMax, and keeps the maximum exactly.
type histogram struct {
	buckets [histMax / time.Microsecond]atomic.Uint64
	over    atomic.Uint64
	max     atomic.Int64
}

const histMax = 20 * time.Millisecond

func (h *histogram) add(err int64, n uint64) {
	err = max(err, 0)
	if err > h.max.Load() {
		h.max.Store(err) // one writer per histogram
	}
	if b := err / int64(time.Microsecond); b < int64(len(h.buckets)) {
		h.buckets[b].Add(n)
	} else {
		h.over.Add(n)
	}
}

func (h *histogram) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.over.Store(0)
	h.max.Store(0)
}

// percentiles returns the p-quantiles (0..1) of the errors counted in hs
// together, at microsecond resolution, and their maximum.
func percentiles(hs []*histogram, ps ...float64) (qs []time.Duration, maxErr time.Duration) {
	var total uint64
	counts := make([]uint64, len(hs[0].buckets)+1)
	for _, h := range hs {
		for i := range h.buckets {
			c := h.buckets[i].Load()
			counts[i] += c
			total += c
		}
		counts[len(counts)-1] += h.over.Load()
		total += h.over.Load()
		maxErr = max(maxErr, time.Duration(h.max.Load()))
	}
	qs = make([]time.Duration, len(ps))
	if total == 0 {
		return qs, maxErr
	}
	for j, p := range ps {
		want := uint64(p*float64(total-1)) + 1
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen >= want {
				if i == len(counts)-1 {
					qs[j] = maxErr
				} else {
					qs[j] = time.Duration(i)*time.Microsecond + time.Microsecond/2
				}
				break
			}
		}
	}
	return qs, maxErr
}
