package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/ferrygrid/ferry/dsi"
)

// Writer is a file being written: WriteAt at any offsets, concurrently
// for disjoint ranges, mapped onto the parts of one multipart upload
// (see the package doc). Close completes the upload; Abort, an error, or
// the Create context's end discards it.
type Writer struct {
	f    *FS
	name string
	key  string
	ctx  context.Context // Create's: its end aborts the upload
	meta map[string]string
	ps   int64 // part size

	// base is the size of the old content kept (Create without
	// Truncate), read back for what the writes do not cover; baseETag
	// pins it.
	base     int64
	baseETag string

	upMu     sync.Mutex // serialises the start of the upload
	uploadID string     // set once under upMu, then read-only

	mu      sync.Mutex
	parts   map[int64]*part              // partial parts; guarded by mu
	done    map[int64]minio.CompletePart // uploaded parts; guarded by mu
	sent    map[int64]bool               // parts full and handed to upload; guarded by mu
	inMem   int                          // parts of parts held in memory; guarded by mu
	spill   *os.File                     // parts past MaxMemParts, at their offsets; guarded by mu
	end     int64                        // the end of the furthest write; guarded by mu
	err     error                        // the first failure; guarded by mu
	closed  bool                         // guarded by mu
	writers sync.WaitGroup               // WriteAt calls in progress
}

// part is a part being filled.
type part struct {
	buf     []byte   // in memory, or nil when it lives in the spill file
	have    []extent // the ranges written, relative to the part, sorted and merged
	writing int      // WriteAt calls copying into it
}

type extent struct{ start, end int64 }

func newWriter(ctx context.Context, f *FS, name string, meta map[string]string) *Writer {
	return &Writer{f: f, name: name, key: f.key(name), ctx: ctx, meta: meta, ps: f.cfg.PartSize,
		parts: map[int64]*part{}, done: map[int64]minio.CompletePart{}, sent: map[int64]bool{}}
}

// add records [s, e) as written and returns the number of bytes covered.
func (p *part) add(s, e int64) int64 {
	p.have = append(p.have, extent{s, e})
	slices.SortFunc(p.have, func(a, b extent) int { return int(a.start - b.start) })
	merged := p.have[:1]
	for _, x := range p.have[1:] {
		last := &merged[len(merged)-1]
		if x.start <= last.end {
			last.end = max(last.end, x.end)
		} else {
			merged = append(merged, x)
		}
	}
	p.have = merged
	var n int64
	for _, x := range merged {
		n += x.end - x.start
	}
	return n
}

// gaps returns the ranges of [0, n) not written.
func (p *part) gaps(n int64) []extent {
	var g []extent
	pos := int64(0)
	for _, x := range p.have {
		if x.start > pos {
			g = append(g, extent{pos, min(x.start, n)})
		}
		pos = max(pos, x.end)
	}
	if pos < n {
		g = append(g, extent{pos, n})
	}
	return slices.DeleteFunc(g, func(x extent) bool { return x.start >= x.end })
}

func (w *Writer) failLocked(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// WriteAt implements io.WriterAt.
func (w *Writer) WriteAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("s3: write %s at %d: %w", w.name, off, dsi.ErrInvalid)
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, fmt.Errorf("s3: write %s: %w", w.name, os.ErrClosed)
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	w.writers.Add(1)
	w.mu.Unlock()
	defer w.writers.Done()
	written := 0
	for written < len(b) {
		pos := off + int64(written)
		i := pos / w.ps
		rel := pos - i*w.ps
		n := min(int64(len(b)-written), w.ps-rel)
		if err := w.writePart(i, rel, b[written:written+int(n)]); err != nil {
			return written, err
		}
		written += int(n)
	}
	return written, nil
}

// writePart copies b into part i at rel, and uploads the part when that
// completed it.
func (w *Writer) writePart(i, rel int64, b []byte) error {
	w.mu.Lock()
	if w.sent[i] {
		w.mu.Unlock()
		// A full part was already sent: S3 cannot patch it.
		return fmt.Errorf("s3: write %s at %d: part %d was already uploaded, rewrites are not supported: %w",
			w.name, i*w.ps+rel, i+1, dsi.ErrNotSupported)
	}
	p, err := w.partLocked(i)
	if err != nil {
		w.mu.Unlock()
		return err
	}
	p.writing++
	spill := w.spill
	w.mu.Unlock()
	// Copy without the lock: ranges of concurrent writers are disjoint.
	if p.buf != nil {
		copy(p.buf[rel:], b)
	} else if _, err := spill.WriteAt(b, i*w.ps+rel); err != nil {
		w.mu.Lock()
		p.writing--
		err = w.failLocked(fmt.Errorf("s3: write %s: buffer: %w", w.name, err))
		w.mu.Unlock()
		return err
	}
	w.mu.Lock()
	p.writing--
	if e := i*w.ps + rel + int64(len(b)); e > w.end {
		w.end = e
	}
	full := p.add(rel, rel+int64(len(b))) == w.ps && p.writing == 0
	if full {
		delete(w.parts, i)
		w.sent[i] = true
	}
	w.mu.Unlock()
	if !full {
		return nil
	}
	return w.upload(i, p, w.ps)
}

// partLocked returns part i, making it if needed.
func (w *Writer) partLocked(i int64) (*part, error) {
	if p, ok := w.parts[i]; ok {
		return p, nil
	}
	p := &part{}
	if w.inMem < w.f.cfg.MaxMemParts {
		p.buf = make([]byte, w.ps)
		w.inMem++
	} else {
		if w.spill == nil {
			f, err := os.CreateTemp(w.f.cfg.TempDir, "ferry-s3-*")
			if err != nil {
				return nil, w.failLocked(fmt.Errorf("s3: write %s: buffer: %w", w.name, err))
			}
			os.Remove(f.Name())
			w.spill = f
		}
	}
	w.parts[i] = p
	return p, nil
}

// reader returns the first n bytes of part p (part i).
func (w *Writer) partReader(i int64, p *part, n int64) io.ReadSeeker {
	if p.buf != nil {
		return bytes.NewReader(p.buf[:n])
	}
	return io.NewSectionReader(w.spill, i*w.ps, n)
}

// start begins the multipart upload once.
func (w *Writer) start() (string, error) {
	w.upMu.Lock()
	defer w.upMu.Unlock()
	if w.uploadID != "" {
		return w.uploadID, nil
	}
	id, err := w.f.core.NewMultipartUpload(w.ctx, w.f.bucket, w.key, minio.PutObjectOptions{UserMetadata: w.meta})
	if err != nil {
		return "", fmt.Errorf("s3: write %s: start upload: %w", w.name, mapErr(err))
	}
	w.uploadID = id
	return id, nil
}

// upload sends the first n bytes of part i and releases its buffer.
func (w *Writer) upload(i int64, p *part, n int64) error {
	err := w.sendPart(i, w.partReader(i, p, n), n)
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.buf != nil {
		p.buf = nil
		w.inMem--
	}
	if err != nil {
		return w.failLocked(err)
	}
	return nil
}

func (w *Writer) sendPart(i int64, r io.Reader, n int64) error {
	id, err := w.start()
	if err != nil {
		return err
	}
	op, err := w.f.core.PutObjectPart(w.ctx, w.f.bucket, w.key, id, int(i+1), r, n,
		minio.PutObjectPartOptions{DisableContentSha256: true})
	if err != nil {
		return fmt.Errorf("s3: write %s: part %d: %w", w.name, i+1, mapErr(err))
	}
	w.mu.Lock()
	w.done[i] = minio.CompletePart{PartNumber: op.PartNumber, ETag: op.ETag}
	w.mu.Unlock()
	return nil
}

// fillBase reads the old content into the unwritten ranges of b, which
// holds bytes [off, off+len(b)) of the file.
func (w *Writer) fillBase(ctx context.Context, b []byte, off int64, gaps []extent) error {
	for _, g := range gaps {
		s, e := off+g.start, min(off+g.end, w.base)
		if s >= e {
			continue
		}
		var opts minio.GetObjectOptions
		opts.SetRange(s, e-1)
		if w.baseETag != "" {
			opts.SetMatchETag(w.baseETag)
		}
		body, _, _, err := w.f.core.GetObject(ctx, w.f.bucket, w.key, opts)
		if err != nil {
			return fmt.Errorf("s3: write %s: read old content: %w", w.name, mapErr(err))
		}
		_, err = io.ReadFull(body, b[g.start:g.start+(e-s)])
		body.Close()
		if err != nil {
			return fmt.Errorf("s3: write %s: read old content: %w", w.name, err)
		}
	}
	return nil
}

// material returns the n bytes of part i as they are to be stored: what
// was written, the old content under what was not, zeros elsewhere.
func (w *Writer) material(ctx context.Context, i int64, p *part, n int64) ([]byte, error) {
	b := make([]byte, n)
	var gaps []extent
	switch {
	case p == nil:
		gaps = []extent{{0, n}}
	case p.buf != nil:
		copy(b, p.buf[:n])
		gaps = p.gaps(n)
	default:
		if _, err := w.spill.ReadAt(b, i*w.ps); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("s3: write %s: buffer: %w", w.name, err)
		}
		gaps = p.gaps(n)
	}
	if err := w.fillBase(ctx, b, i*w.ps, gaps); err != nil {
		return nil, err
	}
	return b, nil
}

// Abort discards the upload: nothing is stored, the old content (if any)
// stays. It is safe to call after Close, then a no-op.
func (w *Writer) Abort() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	w.writers.Wait()
	return w.abort()
}

func (w *Writer) abort() error {
	w.release()
	w.upMu.Lock()
	id := w.uploadID
	w.upMu.Unlock()
	if id == "" {
		return nil
	}
	if err := w.f.core.AbortMultipartUpload(context.WithoutCancel(w.ctx), w.f.bucket, w.key, id); err != nil {
		return fmt.Errorf("s3: abort upload of %s: %w", w.name, mapErr(err))
	}
	return nil
}

// release drops the buffers.
func (w *Writer) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.parts = map[int64]*part{}
	w.inMem = 0
	if w.spill != nil {
		w.spill.Close()
		w.spill = nil
	}
}

// Close implements io.Closer: it uploads what is left and completes the
// upload, so that the object appears whole; or, after a failure or the
// end of the Create context, aborts it and reports why.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("s3: close %s: %w", w.name, os.ErrClosed)
	}
	w.closed = true
	w.mu.Unlock()
	w.writers.Wait()
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err == nil && w.ctx.Err() != nil {
		err = fmt.Errorf("s3: write %s: %w", w.name, context.Cause(w.ctx))
	}
	if err == nil {
		err = w.commit()
	}
	if err != nil {
		if aerr := w.abort(); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return err
	}
	w.release()
	return nil
}

// commit stores the object.
func (w *Writer) commit() error {
	ctx := context.WithoutCancel(w.ctx)
	size := max(w.end, w.base)
	w.upMu.Lock()
	started := w.uploadID != ""
	w.upMu.Unlock()
	if !started && size <= w.ps {
		// One piece: a plain PUT.
		b, err := w.material(ctx, 0, w.parts[0], size)
		if err != nil {
			return err
		}
		_, err = w.f.c.PutObject(ctx, w.f.bucket, w.key, bytes.NewReader(b), size,
			minio.PutObjectOptions{UserMetadata: w.meta, DisableMultipart: true})
		if err != nil {
			return fmt.Errorf("s3: write %s: %w", w.name, mapErr(err))
		}
		return nil
	}
	nparts := (size + w.ps - 1) / w.ps
	w.mu.Lock()
	todo := map[int64]*part{}
	for i := range nparts {
		if _, ok := w.done[i]; !ok {
			todo[i] = w.parts[i]
		}
	}
	w.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, p := range todo {
		n := min(w.ps, size-i*w.ps)
		g.Go(func() error {
			b, err := w.material(gctx, i, p, n)
			if err != nil {
				return err
			}
			return w.sendPart(i, bytes.NewReader(b), n)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	parts := make([]minio.CompletePart, 0, nparts)
	w.mu.Lock()
	for i := range nparts {
		parts = append(parts, w.done[i])
	}
	w.mu.Unlock()
	id, err := w.start()
	if err != nil {
		return err
	}
	if _, err := w.f.core.CompleteMultipartUpload(ctx, w.f.bucket, w.key, id, parts, minio.PutObjectOptions{UserMetadata: w.meta}); err != nil {
		return fmt.Errorf("s3: write %s: complete upload: %w", w.name, mapErr(err))
	}
	w.upMu.Lock()
	w.uploadID = ""
	w.upMu.Unlock()
	return nil
}

var _ dsi.Writer = (*Writer)(nil)
