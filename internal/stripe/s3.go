package stripe

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/xfer"
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

// stripeReader is a Reader that can be told which blocks of a striped
// download it serves (dsi/s3's Reader: it then fetches only those with
// its ranged GETs).
type stripeReader interface {
	Stripe(base, block int64, mine func(b int64) bool)
}

// ownBlocks says which stripe blocks of req this mover sends to its
// receivers (as the DTP deals them, internal/dtp planSend): with the
// blocked layout over k = max(senders, receivers) parts, block b is part
// b mod k, and this mover sends the parts equal to its index modulo the
// senders. mine is nil when the mover sends the whole range.
func ownBlocks(req *xfer.Request, receivers int) (block int64, mine func(b int64) bool) {
	senders := req.Senders
	if senders <= 1 || req.Mode != xfer.ModeEBlock || req.StripeLayout != xfer.LayoutBlocked {
		return 0, nil
	}
	k := int64(max(senders, receivers, 1))
	block = req.StripeBlockSize
	if block <= 0 {
		block = xfer.DefaultStripeBlockSize
	}
	index := int64(req.SenderIndex)
	return block, func(b int64) bool { return b%k%int64(senders) == index }
}
