package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	ftpclient "github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/testutil/s3server"
)

// TestStripedS3 runs ferry serve -storage s3 -movers with four ferry
// mover -storage s3 on one bucket of a real S3 server (SeaweedFS), and
// moves a file up and down with ferry cp -p 8: through one mover (PASV),
// and striped over the four (-stripe, with a stripe block of the part
// size, and of the default 1 MiB). Every object is byte-identical, and
// nothing else is left in the bucket.
func TestStripedS3(t *testing.T) {
	srv := s3server.Start(t)
	s3args := []string{"-storage", "s3", "-s3-endpoint", srv.Endpoint, "-s3-bucket", srv.Bucket, "-s3-prefix", "served",
		"-s3-region", s3server.Region, "-s3-access-key", s3server.AccessKey, "-s3-secret-key", s3server.SecretKey}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("a secret of the frontend and its movers"), 0o600); err != nil {
		t.Fatal(err)
	}
	var movers []string
	for range 4 {
		_, addr := startCommand(t, "Mover listening at ", append([]string{"mover", "-listen", "127.0.0.1:0", "-secret", secret}, s3args...)...)
		movers = append(movers, addr)
	}
	_, addr := startServe(t, append([]string{"-anonymous-write", "-movers", strings.Join(movers, ","), "-mover-secret", secret,
		"-run-as-mapped-user=false"}, s3args...)...)
	waitMovers(t, addr, 4)

	local := t.TempDir()
	src := filepath.Join(local, "src.bin")
	want := randomData(t, 80<<20+4321)
	if err := os.WriteFile(src, want, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"one-mover", []string{"-p", "8"}},
		{"striped-aligned", []string{"-p", "8", "-stripe", "-sbs", "8M"}},
		{"striped", []string{"-p", "8", "-stripe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "ftp://" + addr + "/" + tc.name + ".bin"
			start := time.Now()
			ok(t, append(append([]string{"cp", "-q"}, tc.args...), src, url)...)
			t.Logf("upload: %v", time.Since(start).Round(time.Millisecond))
			keys = append(keys, "served/"+tc.name+".bin")
			o, err := c.GetObject(t.Context(), srv.Bucket, "served/"+tc.name+".bin", minio.GetObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(o)
			o.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("object: %d bytes (%v), differs from the %d sent", len(got), err, len(want))
			}
			dst := filepath.Join(local, tc.name+".got")
			ok(t, append(append([]string{"cp", "-q"}, tc.args...), url, dst)...)
			if !bytes.Equal(mustRead(t, dst), want) {
				t.Fatal("download differs")
			}
			os.Remove(dst)
		})
	}
	for u := range c.ListIncompleteUploads(t.Context(), srv.Bucket, "", true) {
		t.Errorf("upload left in progress: %s (%v)", u.Key, u.Err)
	}
	for o := range c.ListObjects(t.Context(), srv.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		found := false
		for _, k := range keys {
			found = found || o.Key == k
		}
		if !found {
			t.Errorf("unexpected object %s (%d bytes)", o.Key, o.Size)
		}
	}
}

// waitMovers waits (bounded) until the striped server at addr has n
// movers up.
func waitMovers(t *testing.T, addr string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := ftpclient.Dial(ctx, addr, &ftpclient.Config{DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Login(ctx, "anonymous", "x"); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := conn.Do(ctx, "SITE STRIPES")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(r.Text(), " up since") == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("movers not up: %s", r.Text())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
