package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/ferrygrid/ferry/dsi"
)

// Shared uploads: the movers of a striped server (internal/stripe) write
// one file together, each the blocks that reach it, into ONE multipart
// upload.
//
//   - The frontend's Writer (the one the protocol interpreter created)
//     starts the upload: Share returns its ID and part size, which the
//     frontend hands to every mover with the transfer.
//   - Each mover writes through Join's Writer: a part whose every byte
//     reached that mover is uploaded by it, under the part's own number
//     (part i holds bytes [i*PartSize, (i+1)*PartSize), as always). The
//     bytes it holds of parts it does not hold whole (a part shared with
//     other movers, or the file's short last part) it stores, at Close,
//     as fragment objects: one small object per contiguous range, under a
//     hidden prefix of the upload (fragPrefix). A mover never completes
//     nor aborts the upload.
//   - The frontend's Close completes the upload exactly once, after all
//     movers ended: it lists the parts (ListParts) and the fragments,
//     builds each part not uploaded whole from its fragments (and, for a
//     file written without truncation, the old content), uploads those,
//     checks for holes as any Writer does, completes, and removes the
//     fragments. Its Abort (a failed transfer) aborts the upload and
//     removes the fragments: no half object appears.
//
// No part is ever written by two movers, whatever the client's stripe
// layout: a part is uploaded only by a mover that holds all of it, and
// otherwise by the frontend. With the blocked layout and a stripe block
// that is a multiple of the part size (ferry cp -stripe -sbs 8M with the
// default 8 MiB parts), every part but the last lies in one mover's
// stripe: the movers upload all of them and the frontend only the last
// (through at most a few fragments). Smaller stripe blocks (the default
// 1 MiB) are correct too, but every part is then shared and its bytes go
// through fragments and the frontend.

// Share starts w's multipart upload, if it has not started, and makes w
// the owner of an upload that other Writers (Join) fill: its Close builds
// what they left as fragments and completes the upload; its Abort aborts
// it. w itself should not be written.
func (w *Writer) Share() (uploadID string, partSize int64, err error) {
	id, err := w.start()
	if err != nil {
		return "", 0, err
	}
	w.mu.Lock()
	w.shared = true
	w.mu.Unlock()
	return id, w.ps, nil
}

// Join returns a Writer of file name that uploads its whole parts into
// the multipart upload uploadID, of parts of partSize bytes (started by another Writer's Share, of the same
// file of a storage on the same bucket and prefix) and stores the rest as
// fragments at Close. It never completes nor aborts the upload; Abort and
// a failed Close only drop its buffers.
func (f *FS) Join(ctx context.Context, name, uploadID string, partSize int64) (dsi.Writer, error) {
	if isRoot(name) {
		return nil, opErr("create", name, dsi.ErrIsDir)
	}
	if uploadID == "" || partSize < MinPartSize || partSize > maxPartSize {
		return nil, fmt.Errorf("s3: join upload of %s: bad upload ID or part size %d: %w", name, partSize, dsi.ErrInvalid)
	}
	w := newWriter(ctx, f, name, nil)
	w.ps = partSize
	w.limit = min(MaxObjectSize, maxParts*w.ps)
	w.uploadID = uploadID
	w.joined = true
	return w, nil
}

// maxPartSize is S3's largest part.
const maxPartSize = 5 << 30

// fragPrefix is where the fragments of upload id live: a hidden
// directory at the top of the storage, one per upload (the ID hashed:
// any characters a store puts in its IDs make a safe key).
func (f *FS) fragPrefix(id string) string {
	sum := sha256.Sum256([]byte(id))
	return f.prefix + ".ferry-stripe/" + hex.EncodeToString(sum[:12]) + "/"
}

// fragKey is the key of the fragment holding file bytes [s, e).
func fragKey(prefix string, s, e int64) string {
	return fmt.Sprintf("%s%016x-%016x", prefix, s, e)
}

// parseFragKey reads back a fragment key's range.
func parseFragKey(prefix, key string) (extent, bool) {
	a, b, ok := strings.Cut(strings.TrimPrefix(key, prefix), "-")
	if !ok {
		return extent{}, false
	}
	s, err1 := strconv.ParseInt(a, 16, 64)
	e, err2 := strconv.ParseInt(b, 16, 64)
	if err1 != nil || err2 != nil || s < 0 || e <= s {
		return extent{}, false
	}
	return extent{s, e}, true
}

// storeFragments is a joined Writer's Close: the parts it holds whole
// are uploaded already; the bytes of the others become fragments.
func (w *Writer) storeFragments() error {
	ctx := context.WithoutCancel(w.ctx)
	prefix := w.f.fragPrefix(w.uploadID)
	type frag struct {
		i    int64
		p    *part
		s, e int64 // file offsets
	}
	var frags []frag
	w.mu.Lock()
	for _, x := range w.have.all() {
		for i := x.start / w.ps; i <= (x.end-1)/w.ps; i++ {
			if p, ok := w.parts[i]; ok {
				frags = append(frags, frag{i, p, max(x.start, i*w.ps), min(x.end, (i+1)*w.ps)})
			}
		}
	}
	w.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, fr := range frags {
		g.Go(func() error {
			b := make([]byte, fr.e-fr.s)
			r := w.partReader(fr.i, fr.p, fr.e-fr.i*w.ps)
			if _, err := r.Seek(fr.s-fr.i*w.ps, io.SeekStart); err != nil {
				return err
			}
			if _, err := io.ReadFull(r, b); err != nil {
				return fmt.Errorf("s3: write %s: buffer: %w", w.name, err)
			}
			_, err := w.f.c.PutObject(gctx, w.f.bucket, fragKey(prefix, fr.s, fr.e), bytes.NewReader(b), int64(len(b)),
				minio.PutObjectOptions{DisableMultipart: true})
			if err != nil {
				return fmt.Errorf("s3: write %s: fragment %d-%d: %w", w.name, fr.s, fr.e, mapErr(err))
			}
			return nil
		})
	}
	return g.Wait()
}

// gatherShared is the owner's first step of Close: it learns what the
// joined Writers stored (the parts of the upload, the fragments) as if
// they had been written to w.
func (w *Writer) gatherShared(ctx context.Context) error {
	w.upMu.Lock()
	id := w.uploadID
	w.upMu.Unlock()
	marker := 0
	for range maxParts + 1 {
		res, err := w.f.core.ListObjectParts(ctx, w.f.bucket, w.key, id, marker, 1000)
		if err != nil {
			return fmt.Errorf("s3: write %s: list parts: %w", w.name, mapErr(err))
		}
		w.mu.Lock()
		for _, p := range res.ObjectParts {
			i := int64(p.PartNumber) - 1
			// Joined Writers upload whole parts only.
			if i < 0 || i >= maxParts || p.Size != w.ps {
				continue
			}
			if (i+1)*w.ps > w.limit {
				w.mu.Unlock()
				return w.pastLimit(i*w.ps, w.ps)
			}
			w.done[i] = minio.CompletePart{PartNumber: p.PartNumber, ETag: p.ETag}
			w.have.add(i*w.ps, (i+1)*w.ps)
			w.end = max(w.end, (i+1)*w.ps)
		}
		w.mu.Unlock()
		if !res.IsTruncated || res.NextPartNumberMarker <= marker {
			break
		}
		marker = res.NextPartNumberMarker
	}
	prefix := w.f.fragPrefix(id)
	for o := range w.f.c.ListObjects(ctx, w.f.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("s3: write %s: list fragments: %w", w.name, mapErr(o.Err))
		}
		x, ok := parseFragKey(prefix, o.Key)
		if !ok || o.Size != x.len() || x.end > w.limit {
			return fmt.Errorf("s3: write %s: bad fragment %s", w.name, o.Key)
		}
		w.mu.Lock()
		if w.have.n >= maxExtents && !w.have.covers(x.start, x.end) {
			w.mu.Unlock()
			return fmt.Errorf("s3: write %s: more than %d separate ranges written: %w", w.name, maxExtents, dsi.ErrInvalid)
		}
		w.have.add(x.start, x.end)
		w.frags = append(w.frags, x)
		w.end = max(w.end, x.end)
		w.mu.Unlock()
	}
	return nil
}

// fillFrags copies the fragments that overlap bytes [off, off+len(b)) of
// the file into b.
func (w *Writer) fillFrags(ctx context.Context, b []byte, off int64) error {
	w.mu.Lock()
	frags := w.frags
	w.mu.Unlock()
	if len(frags) == 0 {
		return nil
	}
	prefix := w.f.fragPrefix(w.uploadIDNow())
	end := off + int64(len(b))
	for _, x := range frags {
		s, e := max(x.start, off), min(x.end, end)
		if s >= e {
			continue
		}
		var opts minio.GetObjectOptions
		opts.SetRange(s-x.start, e-x.start-1)
		body, _, _, err := w.f.core.GetObject(ctx, w.f.bucket, fragKey(prefix, x.start, x.end), opts)
		if err != nil {
			return fmt.Errorf("s3: write %s: read fragment: %w", w.name, mapErr(err))
		}
		_, err = io.ReadFull(body, b[s-off:e-off])
		body.Close()
		if err != nil {
			return fmt.Errorf("s3: write %s: read fragment: %w", w.name, err)
		}
	}
	return nil
}

func (w *Writer) uploadIDNow() string {
	w.upMu.Lock()
	defer w.upMu.Unlock()
	return w.uploadID
}

// dropFragments removes the fragments of upload id (best effort: a
// leftover is a hidden object, never part of a file).
func (w *Writer) dropFragments(id string) error {
	ctx := context.WithoutCancel(w.ctx)
	objs := make(chan minio.ObjectInfo)
	go func() {
		defer close(objs)
		for o := range w.f.c.ListObjects(ctx, w.f.bucket, minio.ListObjectsOptions{Prefix: w.f.fragPrefix(id), Recursive: true}) {
			if o.Err != nil {
				return
			}
			objs <- o
		}
	}()
	var errs []error
	for e := range w.f.c.RemoveObjects(ctx, w.f.bucket, objs, minio.RemoveObjectsOptions{}) {
		errs = append(errs, fmt.Errorf("s3: remove fragment %s: %w", e.ObjectName, mapErr(e.Err)))
	}
	return errors.Join(errs...)
}
