package s3_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/s3"
)

// objects lists the keys under the storage.
func objects(t *testing.T, fsys *s3.FS) []string {
	t.Helper()
	var keys []string
	for o := range fsys.Client().ListObjects(t.Context(), fsys.Bucket(), minio.ListObjectsOptions{Prefix: fsys.Key("/"), Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// TestSharedUpload: three Writers joined to one upload (three movers of
// a striped server, each with its own storage on the bucket) write a
// file dealt to them in blocks, and the owner's Close stores it whole:
// with blocks of the part size (every part uploaded by one joiner), and
// of 1 MiB and odd sizes (every part shared, built from fragments). An
// owner's Abort leaves no object, no upload and no fragment.
func TestSharedUpload(t *testing.T) {
	// Every storage on the same prefix, as a frontend's and its movers'.
	samePrefix := func(c *s3.Config) { c.Prefix = "shared-" + t.Name() }
	owner := newFS(t, samePrefix)
	ps := int64(s3.MinPartSize)
	data := random(int(4*ps + 777))
	for _, tc := range []struct {
		name  string
		block int64
		abort bool
	}{
		{"aligned", ps, false},
		{"shared", 1 << 20, false},
		{"odd", 300001, false},
		{"aborted", 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			name := "/" + tc.name + ".bin"
			w, err := owner.Create(ctx, name, dsi.CreateOptions{Truncate: true, Size: -1})
			if err != nil {
				t.Fatal(err)
			}
			id, size, err := w.(interface {
				Share() (string, int64, error)
			}).Share()
			if err != nil || size != ps {
				t.Fatalf("Share: %q %d %v", id, size, err)
			}
			const movers = 3
			joined := make([]dsi.Writer, movers)
			for k := range joined {
				// Each mover has a storage of its own on the bucket.
				st := newFS(t, samePrefix)
				if joined[k], err = st.Join(ctx, name, id, size); err != nil {
					t.Fatal(err)
				}
			}
			// Deal the blocks round-robin, the last first.
			nblocks := (int64(len(data)) + tc.block - 1) / tc.block
			for b := nblocks - 1; b >= 0; b-- {
				s, e := b*tc.block, min((b+1)*tc.block, int64(len(data)))
				if _, err := joined[b%movers].WriteAt(data[s:e], s); err != nil {
					t.Fatal(err)
				}
			}
			for _, j := range joined {
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.abort {
				if err := w.(interface{ Abort() error }).Abort(); err != nil {
					t.Fatal(err)
				}
				if _, err := owner.Stat(ctx, name); !errors.Is(err, dsi.ErrNotExist) {
					t.Errorf("Stat after Abort: %v, want not exist", err)
				}
			} else {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if got := readAll(t, owner, name); !bytes.Equal(got, data) {
					t.Fatalf("object of %d bytes differs from the %d written", len(got), len(data))
				}
			}
			if u := uploads(t, owner); len(u) > 0 {
				t.Errorf("uploads left: %q", u)
			}
			for _, k := range objects(t, owner) {
				if !strings.HasSuffix(k, ".bin") || strings.Contains(k, ".ferry-stripe") {
					t.Errorf("object left: %s", k)
				}
			}
		})
	}
}
