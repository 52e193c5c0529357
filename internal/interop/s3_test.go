package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/ferrygrid/ferry/internal/testutil/s3server"
)

// s3Size is the file size of TestS3Storage: 64 MiB, or 1 GiB with
// FERRY_S3_BIG=1 (issue 19's acceptance size; minutes on two cores).
func s3Size() int64 {
	if os.Getenv("FERRY_S3_BIG") != "" {
		return 1 << 30
	}
	return 64<<20 + 12345
}

// TestS3Storage serves a bucket of a real S3 server (SeaweedFS, started
// here) with ferry serve -storage s3, and moves a file up and down with
// ferry cp -p 8 and globus-url-copy -p 8, checking the object in the
// bucket itself, and that no upload or part file is left behind.
func TestS3Storage(t *testing.T) {
	need(t, "globus-url-copy")
	s3srv := s3server.Start(t)
	conf := filepath.Join(t.TempDir(), "ferry.conf")
	writeFile(t, conf, strings.Join([]string{
		"storage s3",
		"s3-endpoint " + s3srv.Endpoint,
		"s3-bucket " + s3srv.Bucket,
		"s3-prefix served",
		"s3-region " + s3server.Region,
		"s3-access-key " + s3server.AccessKey,
		"s3-secret-key " + s3server.SecretKey,
		"",
	}, "\n"))
	srv := startFerry(t, t.TempDir(), "-anonymous-write", "-config", conf)
	c, err := s3srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	objectSum := func(t *testing.T, key string) string {
		t.Helper()
		o, err := c.GetObject(t.Context(), s3srv.Bucket, key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		h := sha256.New()
		if _, err := io.Copy(h, o); err != nil {
			t.Fatalf("reading object %s: %v", key, err)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	size := s3Size()
	local := t.TempDir()
	src := filepath.Join(local, "src.bin")
	want := writeRandom(t, src, size, 19)
	ferry(t, "mkdir", srv.url("/dir"))

	for _, tc := range []struct {
		name     string
		up, down func(from, to string)
	}{
		{"ferry-cp", func(from, to string) { ferry(t, "cp", "-q", "-p", "8", from, to) },
			func(from, to string) { ferry(t, "cp", "-q", "-p", "8", from, to) }},
		{"globus-url-copy", func(from, to string) { mustRun(t, "", "", "globus-url-copy", "-p", "8", "file://"+from, to) },
			func(from, to string) { mustRun(t, "", "", "globus-url-copy", "-p", "8", from, "file://"+to) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("/dir/%s.bin", tc.name)
			tc.up(src, srv.url(name))
			if got := objectSum(t, "served"+name); got != want {
				t.Fatalf("object %s: SHA-256 %s, want %s", name, got, want)
			}
			got := filepath.Join(local, tc.name+".got")
			tc.down(srv.url(name), got)
			sameFile(t, got, want)
			os.Remove(got)
		})
	}

	t.Run("ls-cksum-rename", func(t *testing.T) {
		out := ferry(t, "ls", srv.url("/dir/"))
		if l := lines(out); len(l) != 2 {
			t.Errorf("ferry ls /dir/ = %q; want the two uploads", l)
		}
		if f := strings.Fields(ferry(t, "cksum", "-a", "SHA256", srv.url("/dir/ferry-cp.bin"))); len(f) == 0 || f[0] != want {
			t.Errorf("ferry cksum = %v, want %s", f, want)
		}
		ferry(t, "mv", srv.url("/dir/ferry-cp.bin"), "/moved.bin")
		if got := objectSum(t, "served/moved.bin"); got != want {
			t.Errorf("renamed object: SHA-256 %s, want %s", got, want)
		}
	})

	// Nothing half-done is left: no upload in progress, no part file.
	for u := range c.ListIncompleteUploads(t.Context(), s3srv.Bucket, "", true) {
		t.Errorf("upload left in progress: %s (%v)", u.Key, u.Err)
	}
	for o := range c.ListObjects(t.Context(), s3srv.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		switch o.Key {
		case "served/dir/", "served/dir/globus-url-copy.bin", "served/moved.bin":
		default:
			t.Errorf("unexpected object %s (%d bytes)", o.Key, o.Size)
		}
	}
}
