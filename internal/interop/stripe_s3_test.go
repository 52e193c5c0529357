package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/ferrygrid/ferry/internal/testutil/s3server"
)

// TestStripedS3GlobusURLCopy: a striped server (ferry serve -movers) and
// four ferry mover processes, all with -storage s3 on one bucket of a
// real S3 server (SeaweedFS); globus-url-copy -p 8 uploads and downloads
// through the first mover, and -stripe -p 8 over all four, byte-identical
// (downloads also with -sbs of the part size; guc's -stripe -sbs uploads
// are broken whatever the server, see TestStripedGlobusURLCopy); the
// bucket holds the objects and nothing else afterwards (no upload in
// progress, no fragment).
func TestStripedS3GlobusURLCopy(t *testing.T) {
	need(t, "globus-url-copy")
	s3srv := s3server.Start(t)
	s3flags := []string{"-storage", "s3", "-s3-endpoint", s3srv.Endpoint, "-s3-bucket", s3srv.Bucket,
		"-s3-prefix", "served", "-s3-region", s3server.Region,
		"-s3-access-key", s3server.AccessKey, "-s3-secret-key", s3server.SecretKey}
	s := &striped{secret: secretFile(t)}
	var addrs []string
	for i := range 4 {
		m := startMover(t, fmt.Sprintf("127.0.0.%d:0", 2+i), t.TempDir(), s.secret, s3flags...)
		s.movers = append(s.movers, m)
		addrs = append(addrs, m.addr)
	}
	s.server = startFerry(t, t.TempDir(), append([]string{"-anonymous-write", "-allow-foreign-data", "-movers", strings.Join(addrs, ","),
		"-mover-secret", s.secret, "-mover-heartbeat", "100ms", "-mover-timeout", "2s"}, s3flags...)...)
	s.waitUp(t, 4)

	local := t.TempDir()
	src := filepath.Join(local, "src.bin")
	want := writeRandom(t, src, 64<<20+12345, 23)
	var keys []string
	for _, tc := range []struct {
		name     string
		up, down []string
	}{
		{"p8", []string{"-p", "8"}, []string{"-p", "8"}},
		{"stripe-p8", []string{"-stripe", "-p", "8"}, []string{"-stripe", "-p", "8"}},
		{"stripe-p8-sbs", []string{"-stripe", "-p", "8"}, []string{"-stripe", "-p", "8", "-sbs", "8388608"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "/" + tc.name + ".bin"
			keys = append(keys, "served"+name)
			mustRun(t, "", "", "globus-url-copy", append(append([]string{}, tc.up...), "file://"+src, s.url(name))...)
			got := filepath.Join(local, tc.name+".got")
			mustRun(t, "", "", "globus-url-copy", append(append([]string{}, tc.down...), s.url(name), "file://"+got)...)
			sameFile(t, got, want)
			os.Remove(got)
		})
	}
	// The S3 credentials are nobody's business but the store's.
	logs := []string{s.server.log.String()}
	for _, m := range s.movers {
		logs = append(logs, m.log.String())
	}
	for _, l := range logs {
		if strings.Contains(l, s3server.SecretKey) {
			t.Errorf("the S3 secret key is in a log:\n%s", l)
		}
	}
	c, err := s3srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	for u := range c.ListIncompleteUploads(t.Context(), s3srv.Bucket, "", true) {
		t.Errorf("upload left in progress: %s (%v)", u.Key, u.Err)
	}
	n := 0
	for o := range c.ListObjects(t.Context(), s3srv.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
		found := false
		for _, k := range keys {
			found = found || o.Key == k
		}
		if !found || o.Size != int64(64<<20+12345) {
			t.Errorf("object %s (%d bytes): not one of the uploads", o.Key, o.Size)
		}
	}
	if n != len(keys) {
		t.Errorf("%d objects in the bucket, want %d", n, len(keys))
	}
}
