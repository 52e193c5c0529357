package stripe_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/s3"
	"github.com/ferrygrid/ferry/internal/stripe"
	"github.com/ferrygrid/ferry/internal/testutil/s3server"
	"github.com/ferrygrid/ferry/server"
)

// s3Cluster is a striped server whose frontend and movers each have
// their own client of one bucket of a real S3 server (SeaweedFS).
type s3Cluster struct {
	*cluster
	srv    *s3server.Server
	c      *minio.Client
	prefix string
	open   func(t *testing.T) *s3.FS // a new storage on the bucket
}

const s3TestPrefix = "served"

// The S3 tests move tens of MiB through a store on a loaded machine: a
// mover is dead when killed (its links drop), not when slow.
const (
	s3Heartbeat = 200 * time.Millisecond
	s3HBTimeout = 20 * time.Second
)

func slowBeat(m *stripe.Mover) { m.Heartbeat, m.HeartbeatTimeout = s3Heartbeat, s3HBTimeout }

func startS3Cluster(t *testing.T, movers int, wrap func(i int, st *s3.FS) dsi.Storage) *s3Cluster {
	t.Helper()
	srv := s3server.Start(t)
	sc := &s3Cluster{srv: srv, prefix: s3TestPrefix}
	sc.open = func(t *testing.T) *s3.FS {
		st, err := s3.New(context.Background(), s3.Config{
			Endpoint: srv.Endpoint, Bucket: srv.Bucket, Prefix: s3TestPrefix, Region: s3server.Region,
			AccessKey: s3server.AccessKey, SecretKey: s3server.SecretKey,
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	var err error
	if sc.c, err = srv.Client(); err != nil {
		t.Fatal(err)
	}
	var procs []*moverProc
	var addrs []string
	for i := range movers {
		var st dsi.Storage = sc.open(t)
		if wrap != nil {
			st = wrap(i, st.(*s3.FS))
		}
		mp := startMover(t, net.JoinHostPort("127.0.0."+string(rune('2'+i)), "0"), st, secret, slowBeat)
		procs = append(procs, mp)
		addrs = append(addrs, mp.addr)
	}
	sc.cluster = startFrontend(t, "", sc.open(t), addrs, func(c *server.Config) {
		c.MoverHeartbeat, c.MoverTimeout = s3Heartbeat, s3HBTimeout
	})
	sc.movers = procs
	sc.waitUp(t, movers)
	return sc
}

// object reads the object of file name from the bucket.
func (sc *s3Cluster) object(t *testing.T, name string) ([]byte, error) {
	t.Helper()
	o, err := sc.c.GetObject(context.Background(), sc.srv.Bucket, sc.prefix+name, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return io.ReadAll(o)
}

// checkClean fails t if an upload is still in progress in the bucket or
// an object other than the keys of want exists.
func (sc *s3Cluster) checkClean(t *testing.T, want ...string) {
	t.Helper()
	ctx := context.Background()
	for u := range sc.c.ListIncompleteUploads(ctx, sc.srv.Bucket, "", true) {
		t.Errorf("upload left in progress: %s (%v)", u.Key, u.Err)
	}
	for o := range sc.c.ListObjects(ctx, sc.srv.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		ok := false
		for _, w := range want {
			ok = ok || o.Key == sc.prefix+w
		}
		if !ok {
			t.Errorf("unexpected object %s (%d bytes)", o.Key, o.Size)
		}
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TestS3StripedRoundTrip: four movers on one bucket. Striped uploads
// (SPAS, each mover gets its stripes) with a stripe block of the part
// size (every part uploaded by one mover) and of 1 MiB (every part
// shared, assembled by the frontend from the movers' fragments), an
// unstriped MODE E upload through one mover and a stream-mode one; all
// land as one object, byte-identical; striped downloads (each mover sends
// its stripes, read with ranged GETs) give the same bytes; nothing is
// left behind in the bucket.
func TestS3StripedRoundTrip(t *testing.T) {
	sc := startS3Cluster(t, 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	want := randomBytes(64<<20 + 12345) // 9 parts of 8 MiB, the last short
	conn, err := sc.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var names []string
	for _, tc := range []struct {
		name string
		opts client.StoreOptions
	}{
		{"aligned", client.StoreOptions{Parallel: 2, Striped: true, StripeBlockSize: s3.DefaultPartSize}},
		{"shared-parts", client.StoreOptions{Parallel: 2, Striped: true}},
		{"one-mover", client.StoreOptions{Parallel: 8, ModeE: true}},
		{"stream", client.StoreOptions{}},
	} {
		name := "/" + tc.name + ".bin"
		names = append(names, name)
		start := time.Now()
		if _, err := conn.StoreAt(ctx, name, bytes.NewReader(want), int64(len(want)), &tc.opts); err != nil {
			t.Fatalf("upload %s: %v", tc.name, err)
		}
		t.Logf("upload %s: %v", tc.name, time.Since(start).Round(time.Millisecond))
		got, err := sc.object(t, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("upload %s: object of %d bytes (%v), differs from the %d sent", tc.name, len(got), err, len(want))
		}
	}
	// Small files: one short part (a fragment of one mover), and none.
	for _, n := range []int{1000, 0} {
		name := fmt.Sprintf("/small-%d.bin", n)
		names = append(names, name)
		if _, err := conn.StoreAt(ctx, name, bytes.NewReader(want[:n]), int64(n), &client.StoreOptions{Parallel: 2, Striped: true}); err != nil {
			t.Fatalf("upload %s: %v", name, err)
		}
		if got, err := sc.object(t, name); err != nil || !bytes.Equal(got, want[:n]) {
			t.Fatalf("upload %s: object of %d bytes (%v), want %d", name, len(got), err, n)
		}
	}
	for _, layout := range []string{"StripeLayout=Blocked;BlockSize=1048576;", "StripeLayout=Partitioned;"} {
		if r, err := conn.Do(ctx, "OPTS RETR %s", layout); err != nil || r.Code != 200 {
			t.Fatalf("OPTS RETR %s: %v %v", layout, r, err)
		}
		stripes := map[int]bool{}
		var mu sync.Mutex
		out := filepath.Join(t.TempDir(), "down.bin")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.RetrieveAt(ctx, names[0], f, &client.RetrieveOptions{Parallel: 2, Progress: func(p client.Progress) {
			mu.Lock()
			defer mu.Unlock()
			for i, n := range p.Streams {
				if n > 0 {
					stripes[i/2] = true
				}
			}
		}})
		f.Close()
		if err != nil {
			t.Fatalf("download (%s): %v", layout, err)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
			t.Fatalf("download (%s): contents differ", layout)
		}
		if len(stripes) != 4 {
			t.Errorf("download (%s): data from %d movers, want 4", layout, len(stripes))
		}
	}
	conn.Close()
	sc.checkClean(t, names...)
}

// gatedS3 is a mover's S3 storage whose shared-upload Writers stop once
// they took limit bytes together, until released.
type gatedS3 struct {
	*s3.FS
	limit    int64
	n        atomic.Int64
	reached  chan struct{}
	released chan struct{}
	once     sync.Once
	relOnce  sync.Once
}

func (g *gatedS3) release() { g.relOnce.Do(func() { close(g.released) }) }

func (g *gatedS3) Join(ctx context.Context, name, id string, ps int64) (dsi.Writer, error) {
	w, err := g.FS.Join(ctx, name, id, ps)
	if err != nil {
		return nil, err
	}
	return &gatedWriter{w, g}, nil
}

type gatedWriter struct {
	dsi.Writer
	g *gatedS3
}

func (w *gatedWriter) WriteAt(b []byte, off int64) (int, error) {
	if w.g.n.Add(int64(len(b))) > w.g.limit {
		w.g.once.Do(func() { close(w.g.reached) })
		<-w.g.released
	}
	return w.Writer.WriteAt(b, off)
}

// TestS3StripedMoverKilled: a mover dies in the middle of a striped
// upload to S3. The upload fails naming it, and leaves nothing: no object,
// no upload in progress, no fragment. The client's retry (once the mover
// is back) sends the file again and the object is byte-identical.
func TestS3StripedMoverKilled(t *testing.T) {
	var gate *gatedS3
	sc := startS3Cluster(t, 4, func(i int, st *s3.FS) dsi.Storage {
		if i != 2 {
			return st
		}
		gate = &gatedS3{FS: st, limit: 12 << 20, reached: make(chan struct{}), released: make(chan struct{})}
		return gate
	})
	defer gate.release()
	victim := sc.movers[2]
	go func() {
		select {
		case <-gate.reached:
			victim.kill()
			gate.release()
		case <-time.After(2 * time.Minute):
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	want := randomBytes(96 << 20)
	const name = "/killed.bin"
	var firstErr error
	var once sync.Once
	s := &client.Session{Dial: sc.dial, Retry: client.RetryPolicy{Retries: 20, Interval: 100 * time.Millisecond, MaxInterval: 500 * time.Millisecond,
		OnRetry: func(attempt int, err error, wait time.Duration) {
			once.Do(func() {
				firstErr = err
				// The failed upload left nothing behind.
				if _, err := sc.object(t, name); err == nil {
					t.Errorf("an object %s exists after the failed upload", name)
				}
				sc.checkClean(t)
				startMover(t, victim.addr, sc.open(t), secret, slowBeat)
			})
		}}}
	defer s.Close(ctx)
	start := time.Now()
	if _, err := s.Upload(ctx, bytes.NewReader(want), int64(len(want)), name, &client.StoreOptions{
		Parallel: 2, Striped: true, StripeBlockSize: s3.DefaultPartSize,
	}); err != nil {
		t.Fatalf("upload with resume: %v (first error %v)", err, firstErr)
	}
	t.Logf("first attempt: %v; done after %v", firstErr, time.Since(start).Round(time.Millisecond))
	// The reply names the first failure the frontend saw: the dead
	// mover's link, or a data connection the client dropped because of
	// it (then another mover's).
	if firstErr == nil {
		t.Error("the upload did not fail when the mover died")
	}
	got, err := sc.object(t, name)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("resumed upload: object of %d bytes (%v), differs from the %d sent", len(got), err, len(want))
	}
	s.Close(ctx)
	sc.checkClean(t, name)
}

// TestS3MoverRefusesUnsharedUpload: a mover on S3 whose frontend does not
// write the same bucket (here: posix) refuses to store, rather than
// complete an object of its own stripes.
func TestS3MoverRefusesUnsharedUpload(t *testing.T) {
	srv := s3server.Start(t)
	st, err := s3.New(context.Background(), s3.Config{
		Endpoint: srv.Endpoint, Bucket: srv.Bucket, Region: s3server.Region,
		AccessKey: s3server.AccessKey, SecretKey: s3server.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	mp := startMover(t, "127.0.0.2:0", st, secret, slowBeat)
	root, fst := newRoot(t)
	c := startFrontend(t, root, fst, []string{mp.addr})
	c.waitUp(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := c.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data := randomBytes(1 << 20)
	_, err = conn.StoreAt(ctx, "/x.bin", bytes.NewReader(data), int64(len(data)), &client.StoreOptions{Parallel: 2, ModeE: true})
	if err == nil || !strings.Contains(err.Error(), "451") {
		t.Fatalf("upload through an S3 mover of a posix frontend: %v; want a 451 refusal", err)
	}
	for o := range st.Client().ListObjects(ctx, srv.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		t.Errorf("object %s stored by a mover of a posix frontend", o.Key)
	}
}

// TestUploadMessage: a receive request carries its shared upload across
// the wire, and one with an empty or absurd upload is refused.
func TestUploadMessage(t *testing.T) {
	m := &stripe.Msg{Type: stripe.TypeReceive, Seq: 7, Upload: &stripe.Upload{ID: "abc.DEF_1", PartSize: 8 << 20}}
	b, err := stripe.AppendFrame(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := stripe.ParseFrame(b)
	if err != nil || n != len(b) || got.Upload == nil || *got.Upload != *m.Upload {
		t.Fatalf("round trip: %+v %d %v", got, n, err)
	}
	for _, body := range []string{`{"up":{"id":"","ps":8388608}}`, `{"up":{"id":"x","ps":0}}`, `{"up":{"id":"` + strings.Repeat("x", 2000) + `","ps":8388608}}`} {
		if _, err := stripe.ParseBody(stripe.TypeReceive, []byte(body)); err == nil {
			t.Errorf("ParseBody(%s) accepted", body[:min(len(body), 40)])
		}
	}
}
