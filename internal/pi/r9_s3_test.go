package pi_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/ferrygrid/ferry/dsi/s3"
	"github.com/ferrygrid/ferry/internal/testutil/s3server"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// countingTransport counts the request body bytes sent to the store.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.ContentLength > 0 {
		c.n.Add(r.ContentLength)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestR9S3OneByteMaterialisesZeros: on S3, a MODE E STOR of a single
// one-byte block at offset N (no ALLO needed: the receiver then has no
// limit) makes the server upload N bytes of zeros to the bucket (the
// Writer fills every gap of [0, N) at Close), where POSIX would keep a
// sparse file. One byte from a client costs up to 10000*PartSize
// (78 GiB by default) of PUTs and stored bytes; past that the upload
// can never complete (see dsi/s3 TestR9HugeOffsetClose).
func TestR9S3OneByteMaterialisesZeros(t *testing.T) {
	srv := s3server.Start(t)
	ct := &countingTransport{}
	st, err := s3.New(t.Context(), s3.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Region: s3server.Region,
		AccessKey: s3server.AccessKey, SecretKey: s3server.SecretKey, PartSize: s3.MinPartSize, Transport: ct})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, serve(t, config(st)))
	c.login()
	c.expect("MODE E", 200)
	const n = 64 << 20
	data := make([]byte, n)
	data[n-1] = 'X'
	before := ct.n.Load()
	_, rest := c.modeEStore("STOR /big", data, 1, []xfer.Range{{Start: n - 1, End: n}})
	up := ct.n.Load() - before
	t.Logf("STOR of one byte at %d: %v; %d bytes sent to the store", n-1, rest[len(rest)-1], up)
	if up > 1<<20 {
		t.Errorf("one byte from the client made the server upload %d MiB to the bucket", up>>20)
	}
	if last := rest[len(rest)-1]; last.Code != 451 {
		t.Errorf("STOR of a file with a hole: %v; want 451", last)
	}
	// No object (nor part file) and no upload are left behind.
	c.expect("SIZE /big", 550)
	c.expect("SIZE /big.ferry-part", 550)
	for u := range st.Client().ListIncompleteUploads(t.Context(), st.Bucket(), "", true) {
		t.Errorf("upload left behind: %v %v", u.Key, u.Err)
	}
}

// TestS3FailedStoreAborts: a STOR whose data connection fails halfway
// aborts its multipart upload: no part file, no upload left.
func TestS3FailedStoreAborts(t *testing.T) {
	srv := s3server.Start(t)
	st, err := s3.New(t.Context(), s3.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, Region: s3server.Region,
		AccessKey: s3server.AccessKey, SecretKey: s3server.SecretKey, PartSize: s3.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, serve(t, config(st)))
	c.login()
	c.expect("MODE E", 200)
	c.expect("ALLO 20000000", 200)
	// 12 MB of the 20 MB announced: two whole parts uploaded, then EOD.
	data := make([]byte, 12_000_000)
	_, rest := c.modeEStore("STOR /cut", data, 2, nil)
	if last := rest[len(rest)-1]; last.Code/100 != 4 {
		t.Fatalf("STOR short of its ALLO: %v; want a 4xx", last)
	}
	c.expect("SIZE /cut", 550)
	c.expect("SIZE /cut.ferry-part", 550)
	for u := range st.Client().ListIncompleteUploads(t.Context(), st.Bucket(), "", true) {
		t.Errorf("upload left behind: %v %v", u.Key, u.Err)
	}
}
