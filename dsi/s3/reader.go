package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"

	"github.com/minio/minio-go/v7"

	"github.com/ferrygrid/ferry/dsi"
)

// newID returns a random identifier for a new object (FileInfo.Unique).
func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cachedChunks is how many chunks a Reader keeps.
const cachedChunks = 6

// Reader is an open object. ReadAt is served from chunks of ReadChunk
// bytes fetched by ranged GETs (the next one prefetched); WriteRangeTo
// streams a long range with one GET. Every GET is pinned to the ETag the
// object had when opened, so a replaced object fails reads instead of
// mixing versions.
type Reader struct {
	f     *FS
	key   string
	size  int64
	etag  string
	chunk int64

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // prefetches

	// Chunk i holds bytes [origin+i*chunk, origin+(i+1)*chunk) of the
	// object (clipped to it); a read of chunk i prefetches chunk
	// next(i). Stripe changes them before the first read.
	origin int64
	mine   func(i int64) bool // nil: every chunk

	mu     sync.Mutex
	chunks map[int64]*chunk // guarded by mu
	order  []int64          // chunk indices, least recently used first; guarded by mu
}

type chunk struct {
	done chan struct{}
	data []byte
	err  error
}

func newReader(f *FS, key string, oi minio.ObjectInfo) *Reader {
	ctx, cancel := context.WithCancel(context.Background())
	return &Reader{f: f, key: key, size: oi.Size, etag: oi.ETag, chunk: f.cfg.ReadChunk,
		ctx: ctx, cancel: cancel, chunks: map[int64]*chunk{}}
}

// Size implements dsi.Reader.
func (r *Reader) Size() int64 { return r.size }

// Close implements dsi.Reader.
func (r *Reader) Close() error {
	r.cancel()
	r.wg.Wait()
	return nil
}

// get opens a ranged GET of [off, off+n).
func (r *Reader) get(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, err
	}
	if r.etag != "" {
		opts.SetMatchETag(r.etag)
	}
	body, _, _, err := r.f.core.GetObject(ctx, r.f.bucket, r.key, opts)
	if err != nil {
		return nil, fmt.Errorf("s3: read %s: %w", r.key, mapErr(err))
	}
	return body, nil
}

// Stripe tells r that it will serve one stripe of a striped download
// (the movers of a striped server, each sending its stripes): the blocks
// of block bytes from base for which mine(b) is true (b counts blocks
// from base). When block is smaller than a chunk, chunks become those
// blocks and only the stripe's own are fetched (and prefetched): a mover
// does not read the bytes the other movers send. Otherwise nothing
// changes (a chunk then straddles at most the ends of a block). Call it
// before the first read.
func (r *Reader) Stripe(base, block int64, mine func(b int64) bool) {
	if block <= 0 || block >= r.chunk || mine == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.chunks) > 0 {
		return
	}
	r.chunk, r.origin = block, base%block
	first := r.chunkOf(base) // block 0
	r.mine = func(i int64) bool { return i >= first && mine(i-first) }
}

// chunkOf is the chunk holding byte pos.
func (r *Reader) chunkOf(pos int64) int64 {
	if r.origin == 0 {
		return pos / r.chunk
	}
	if pos < r.origin {
		return 0
	}
	return (pos-r.origin)/r.chunk + 1
}

// chunkStart is the offset of chunk i's first byte.
func (r *Reader) chunkStart(i int64) int64 {
	if r.origin == 0 {
		return i * r.chunk
	}
	if i == 0 {
		return 0
	}
	return r.origin + (i-1)*r.chunk
}

// nextChunk is the chunk to prefetch after chunk i, or -1.
func (r *Reader) nextChunk(i int64) int64 {
	for j := i + 1; j <= i+maxStripes && r.chunkStart(j) < r.size; j++ {
		if r.mine == nil || r.mine(j) {
			return j
		}
	}
	return -1
}

// maxStripes bounds how far ahead nextChunk looks for the stripe's next
// chunk (a striped server has at most 64 movers).
const maxStripes = 64

// fetch fills c with chunk i.
func (r *Reader) fetch(i int64, c *chunk) {
	defer close(c.done)
	off := r.chunkStart(i)
	n := min(r.chunkStart(i+1), r.size) - off
	body, err := r.get(r.ctx, off, n)
	if err != nil {
		c.err = err
		return
	}
	defer body.Close()
	c.data = make([]byte, n)
	if _, err := io.ReadFull(body, c.data); err != nil {
		c.err = fmt.Errorf("s3: read %s at %d: %w", r.key, off, err)
	}
}

// chunkAt returns chunk i, fetching it (and starting the next one) if it
// is not cached.
func (r *Reader) chunkAt(i int64) (*chunk, error) {
	r.mu.Lock()
	c, ok := r.chunks[i]
	if ok {
		select {
		case <-c.done:
			if c.err != nil {
				delete(r.chunks, i) // fetch again
				ok = false
			}
		default:
		}
	}
	var start []int64
	if !ok {
		c = r.addLocked(i)
		start = append(start, i)
	} else {
		r.touchLocked(i)
	}
	if next := r.nextChunk(i); next >= 0 {
		if _, have := r.chunks[next]; !have {
			r.addLocked(next)
			start = append(start, next)
		}
	}
	cs := make([]*chunk, len(start))
	for k, j := range start {
		cs[k] = r.chunks[j]
	}
	r.mu.Unlock()
	for k, j := range start {
		if j == i {
			r.fetch(j, cs[k])
		} else {
			r.wg.Go(func() { r.fetch(j, cs[k]) })
		}
	}
	select {
	case <-c.done:
	case <-r.ctx.Done():
		return nil, fmt.Errorf("s3: read %s: %w", r.key, fs.ErrClosed)
	}
	return c, c.err
}

func (r *Reader) addLocked(i int64) *chunk {
	c := &chunk{done: make(chan struct{})}
	r.chunks[i] = c
	r.order = append(slices.DeleteFunc(r.order, func(j int64) bool { return j == i }), i)
	for len(r.order) > cachedChunks {
		delete(r.chunks, r.order[0])
		r.order = r.order[1:]
	}
	return c
}

func (r *Reader) touchLocked(i int64) {
	for k, j := range r.order {
		if j == i {
			r.order = append(append(r.order[:k:k], r.order[k+1:]...), i)
			return
		}
	}
}

// ReadAt implements io.ReaderAt; it is safe for concurrent use.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("s3: read %s at %d: %w", r.key, off, dsi.ErrInvalid)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), r.size-off)
	var n int64
	for n < want {
		pos := off + n
		i := r.chunkOf(pos)
		c, err := r.chunkAt(i)
		if err != nil {
			return int(n), err
		}
		n += int64(copy(p[n:want], c.data[pos-r.chunkStart(i):]))
	}
	if want < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// directRange is the length from which WriteRangeTo streams one GET
// instead of going through the chunks.
func (r *Reader) directRange() int64 { return 2 * r.chunk }

// WriteRangeTo implements dsi.RangeWriterTo.
func (r *Reader) WriteRangeTo(w io.Writer, off, n int64) (int64, error) {
	if off < 0 || n < 0 {
		return 0, fmt.Errorf("s3: read %s: %w", r.key, dsi.ErrInvalid)
	}
	short := false
	if off+n > r.size {
		n, short = max(r.size-off, 0), true
	}
	var done int64
	var err error
	switch {
	case n == 0:
	case n >= r.directRange():
		var body io.ReadCloser
		body, err = r.get(r.ctx, off, n)
		if err == nil {
			done, err = io.CopyN(w, body, n)
			body.Close()
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
		}
	default:
		for done < n && err == nil {
			pos := off + done
			var c *chunk
			i := r.chunkOf(pos)
			if c, err = r.chunkAt(i); err != nil {
				break
			}
			b := c.data[pos-r.chunkStart(i):]
			b = b[:min(int64(len(b)), n-done)]
			var m int
			m, err = w.Write(b)
			done += int64(m)
		}
	}
	if err == nil && short {
		err = io.ErrUnexpectedEOF
	}
	return done, err
}

var (
	_ dsi.Reader        = (*Reader)(nil)
	_ dsi.RangeWriterTo = (*Reader)(nil)
)
