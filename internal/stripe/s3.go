package stripe

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrygrid/ferry/dsi"
)

// Striping over an object store (dsi/s3, docs/storage-s3.md): every mover
// writes the same S3 object, which only a multipart upload lets several
// hosts do. The frontend's own Writer of the file (the one the protocol
// interpreter created and closes) starts the upload (ShareUpload); each
// mover gets its ID and part size with the transfer (Msg.Upload) and
// writes through a Writer that joins it (JoinUpload): a part it holds
// whole it uploads itself, the rest it leaves as fragments. When every
// mover is done the interpreter closes the frontend's Writer, which
// completes the upload once (or aborts it after a failure: no half object
// appears). Downloads need nothing of this: each mover opens the object
// and reads its stripes with ranged GETs.
//
// The movers' range markers (111) are not passed on for such an upload:
// a failed upload is aborted, so a retry must send the whole file again,
// and a client told that ranges were stored would send only the others.

// Upload names the shared multipart upload a receiving mover writes into.
type Upload struct {
	ID       string `json:"id"`
	PartSize int64  `json:"ps"`
}

// uploadSharer is the frontend's Writer of a storage whose movers fill
// one upload together (dsi/s3's Writer).
type uploadSharer interface {
	Share() (uploadID string, partSize int64, err error)
}

// uploadJoiner is a mover's storage that writes a file through an upload
// another host started (dsi/s3's FS). A mover on such a storage writes
// only into shared uploads: a Writer of its own would complete an object
// of its stripes alone.
type uploadJoiner interface {
	Join(ctx context.Context, name, uploadID string, partSize int64) (dsi.Writer, error)
}

// shareUpload starts dst's upload for the movers to share, when dst is
// such a Writer; nil otherwise.
func shareUpload(dst dsi.Writer) (*Upload, error) {
	sh, ok := dst.(uploadSharer)
	if !ok {
		return nil, nil
	}
	id, ps, err := sh.Share()
	if err != nil {
		return nil, err
	}
	return &Upload{ID: id, PartSize: ps}, nil
}

// createForJob opens the file a receiving mover writes: through the
// shared upload u, or created as usual.
func createForJob(ctx context.Context, st dsi.Storage, path string, u *Upload, opts dsi.CreateOptions) (dsi.Writer, error) {
	j, joins := st.(uploadJoiner)
	switch {
	case u != nil && joins:
		return j.Join(ctx, path, u.ID, u.PartSize)
	case u != nil:
		return nil, errors.New("the frontend writes this file as a shared S3 upload, but this mover's storage is not S3 (run every mover with -storage s3 on the frontend's bucket)")
	case joins:
		return nil, fmt.Errorf("this mover's storage is S3, but the frontend did not share an upload for %s (the frontend's storage must be the same bucket, -storage s3)", path)
	}
	return st.Create(ctx, path, opts)
}
