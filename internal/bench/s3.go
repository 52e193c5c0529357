package bench

// The S3 workloads (issue 19): Ferry on S3 against the S3 server's own
// kind of client. A SeaweedFS server ("weed mini": master, volume, filer
// and S3 gateway in one process, as internal/testutil/s3server starts it
// for the tests) runs on loopback with a bucket; the workload's source
// file is put into it once as an object. Then, per run:
//
//   - Ferry: ferry cp [-p N] against ferry serve -storage s3 on that
//     bucket (s3: the object downloaded to a new local file; s3-up: the
//     page-cached source file uploaded to a new object);
//   - S3Client: aws s3 cp straight to the S3 gateway, with
//     max_concurrent_requests N and the same 8 MiB parts as ferry serve's
//     multipart uploads (-s3-part-size's default).
//
// The server side of a run is weed for both, plus ferry serve for Ferry:
// its CPU time is the sum of both processes', its peak RSS the sum of
// their peaks.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The S3 workloads.
const (
	S3   Workload = "s3"    // an object downloaded to a new local file
	S3Up Workload = "s3-up" // a local file uploaded to a new object
)

// s3 reports whether w is an S3 workload.
func (w Workload) s3() bool { return w == S3 || w == S3Up }

// The S3 server's bucket, identity and region.
const (
	s3Bucket    = "ferrybench"
	s3AccessKey = "ferrybench"
	s3Region    = "us-east-1"
	// s3PartSize is the part size of both clients' multipart uploads and
	// of the aws CLI's ranged downloads: ferry serve's default.
	s3PartSize = "8MB"
)

// s3Setup is the running S3 server of a Run.
type s3Setup struct {
	endpoint string // http://127.0.0.1:PORT
	secret   string
	weed     *server
	client   *minio.Client
}

// env returns this process's environment without its AWS variables (a
// session token or profile of the user's would spoil the signatures),
// and the AWS variables for the server's identity.
func (s *s3Setup) env() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_") })
	return append(env,
		"AWS_ACCESS_KEY_ID="+s3AccessKey,
		"AWS_SECRET_ACCESS_KEY="+s.secret,
		"AWS_REGION="+s3Region,
		"AWS_EC2_METADATA_DISABLED=true",
	)
}

// serveArgs returns the flags of ferry serve for the bucket; the keys
// come from env.
func (s *s3Setup) serveArgs() []string {
	return []string{"-storage", "s3", "-s3-endpoint", s.endpoint, "-s3-bucket", s3Bucket, "-s3-region", s3Region}
}

// checkS3 finds the programs the S3 workloads need: weed and, for the
// S3 client, the aws CLI (installed with apt-get when missing, as root).
func (r *runner) checkS3(ctx context.Context) error {
	if !slices.ContainsFunc(r.cfg.Workloads, func(w Workload) bool { return w.s3() && r.cfg.runs(w) }) {
		return nil
	}
	var err error
	if r.weed, err = findWeed(r.cfg.Weed); err != nil {
		return err
	}
	if r.cfg.needed(S3Client) {
		if r.aws, err = r.findAWS(ctx); err != nil {
			return err
		}
	}
	return nil
}

// findWeed returns the weed binary: given, else $FERRY_WEED, else weed on
// $PATH, else the newest one the tests built (internal/testutil/s3server:
// the user's cache directory, ferry-test/weed-VERSION/weed).
func findWeed(given string) (string, error) {
	for _, p := range []string{given, os.Getenv("FERRY_WEED")} {
		if p != "" {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("bench: weed: %w", err)
			}
			return p, nil
		}
	}
	if p, err := exec.LookPath("weed"); err == nil {
		return p, nil
	}
	if cache, err := os.UserCacheDir(); err == nil {
		bins, _ := filepath.Glob(filepath.Join(cache, "ferry-test", "weed-*", "weed"))
		slices.Sort(bins) // the versions are dated: the newest last
		if len(bins) > 0 {
			return bins[len(bins)-1], nil
		}
	}
	return "", errors.New("bench: no weed (SeaweedFS) for the S3 workloads: \"make deps\" builds one; or give -weed or $FERRY_WEED")
}

// findAWS returns the aws CLI, installing Debian's awscli when it is
// missing and this process is root.
func (r *runner) findAWS(ctx context.Context) (string, error) {
	if r.cfg.AWS != "" {
		return r.cfg.AWS, nil
	}
	if p, err := exec.LookPath("aws"); err == nil {
		return p, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		return "", errors.New("bench: the aws CLI is not installed (apt-get install awscli); leave the s3 implementation out with -impls")
	}
	fmt.Fprintf(r.progress, "bench: installing the aws CLI: apt-get install -y awscli\n")
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "awscli")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: apt-get install awscli: %w\n%s", err, lastLines(string(out), 10))
	}
	return program("aws", "/usr/bin/aws")
}

// weedReady bounds how long weed may take to serve the bucket.
const weedReady = 3 * time.Minute

// startS3 starts weed mini with its data under the scratch directory,
// makes the bucket and puts the source file into it, once.
func (r *runner) startS3(ctx context.Context) error {
	if r.s3 != nil {
		return nil
	}
	dir := filepath.Join(r.scratch, "s3")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	ports, err := weedPorts(4)
	if err != nil {
		return err
	}
	secret := strconv.FormatInt(time.Now().UnixNano(), 36) + "-ferry-bench"
	conf := fmt.Sprintf(`{"identities":[{"name":"ferrybench","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","List","Tagging","Write"]}]}`, s3AccessKey, secret)
	confPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	args := []string{"mini", "-dir=" + data,
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + itoa(ports[0]), "-volume.port=" + itoa(ports[1]),
		"-filer.port=" + itoa(ports[2]), "-s3.port=" + itoa(ports[3]),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=" + confPath,
		"-webdav=false", "-admin.ui=false", "-master.telemetry=false",
		"-bucket=" + s3Bucket}
	fmt.Fprintf(r.progress, "bench: starting %s\n", commandLine(r.weed, args))
	s := &s3Setup{endpoint: "http://127.0.0.1:" + itoa(ports[3]), secret: secret}
	cmd := command(ctx, r.weed, args...)
	cmd.Dir = dir
	cmd.Env = s.env()
	srv := &server{name: "weed", cmd: cmd, log: &tail{}, exited: make(chan struct{}), port: ports[3]}
	cmd.Stdout, cmd.Stderr = srv.log, srv.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: weed: %w", err)
	}
	srv.pid = cmd.Process.Pid
	go func() {
		srv.err = cmd.Wait()
		close(srv.exited)
	}()
	r.servers["weed"] = srv // stopped with the others
	s.weed = srv
	if s.client, err = minio.New(strings.TrimPrefix(s.endpoint, "http://"), &minio.Options{
		Creds:  credentials.NewStaticV4(s3AccessKey, secret, ""),
		Region: s3Region,
	}); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := s.waitReady(ctx); err != nil {
		return err
	}
	fmt.Fprintf(r.progress, "bench: putting %s into the bucket\n", sourceName)
	if _, err := s.client.FPutObject(ctx, s3Bucket, sourceName, r.source, minio.PutObjectOptions{PartSize: 8 << 20}); err != nil {
		return fmt.Errorf("bench: putting the source object: %w%s", err, srv.log.suffix())
	}
	r.s3 = s
	return nil
}

// waitReady polls until the gateway answers for the bucket and a signed
// write and read work (the volume server may register after the gateway
// answers).
func (s *s3Setup) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(weedReady)
	hc := &http.Client{Timeout: 5 * time.Second}
	var last error
	for {
		if err := s.weed.alive(); err != nil {
			return err
		}
		// Unsigned: 403 once the gateway and the bucket are there.
		if resp, err := hc.Head(s.endpoint + "/" + s3Bucket); err != nil {
			last = err
		} else {
			resp.Body.Close()
			last = fmt.Errorf("HEAD of the bucket: %s", resp.Status)
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusForbidden {
				if last = s.probe(ctx); last == nil {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: weed's S3 gateway not ready after %v: %v%s", weedReady, last, s.weed.log.suffix())
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// probe writes, reads back and removes a small object.
func (s *s3Setup) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const key, body = ".ferry-bench-probe", "ready"
	if _, err := s.client.PutObject(ctx, s3Bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		return err
	}
	o, err := s.client.StatObject(ctx, s3Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return err
	}
	if o.Size != int64(len(body)) {
		return fmt.Errorf("probe object of %d bytes, want %d", o.Size, len(body))
	}
	return s.client.RemoveObject(ctx, s3Bucket, key, minio.RemoveObjectOptions{})
}

// weedPorts returns n distinct loopback ports p such that p+10000 (where
// weed puts each of its servers' gRPC port) is free too.
func weedPorts(n int) ([]int, error) {
	var ports []int
	var hold []net.Listener
	defer func() {
		for _, l := range hold {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n && tries < 200; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		if p+10000 > 65535 {
			l.Close()
			continue
		}
		g, err := net.Listen("tcp", "127.0.0.1:"+itoa(p+10000))
		if err != nil {
			l.Close()
			continue
		}
		hold = append(hold, l, g)
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, errors.New("bench: no free port pairs for weed")
	}
	return ports, nil
}

// awsConfig writes the aws CLI's configuration for p concurrent requests
// and returns its path.
func (r *runner) awsConfig(p int) (string, error) {
	name := filepath.Join(r.scratch, "s3", fmt.Sprintf("aws-p%d.config", p))
	conf := fmt.Sprintf("[default]\nregion = %s\ns3 =\n  max_concurrent_requests = %d\n  multipart_threshold = %s\n  multipart_chunksize = %s\n",
		s3Region, p, s3PartSize, s3PartSize)
	if err := os.WriteFile(name, []byte(conf), 0o600); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return name, nil
}

// runS3 makes one run of the S3 workload s.Workload with s.Impl.
func (r *runner) runS3(ctx context.Context, s *Sample) error {
	weed := r.s3.weed
	if err := weed.alive(); err != nil {
		return err
	}
	var dest, key string // the copy: a local file (S3) or an object (S3Up)
	if s.Workload == S3 {
		dest = filepath.Join(r.dest, fmt.Sprintf("s3-%s-p%d.dat", s.Impl, s.P))
		os.Remove(dest)
		defer os.Remove(dest)
	} else {
		key = fmt.Sprintf("up-%s-p%d.dat", s.Impl, s.P)
		defer r.s3.client.RemoveObject(context.WithoutCancel(ctx), s3Bucket, key, minio.RemoveObjectOptions{})
	}
	var path string
	var args, env []string
	servers := []*server{weed}
	switch s.Impl {
	case Ferry:
		srv, err := r.server(ctx, Ferry, s.Workload)
		if err != nil {
			return err
		}
		if err := srv.alive(); err != nil {
			return err
		}
		servers = append(servers, srv)
		base := "ftp://" + net.JoinHostPort("127.0.0.1", itoa(srv.port))
		path, args = r.cfg.Ferry, []string{"cp", "-q", "-auto=false"}
		if s.P > 1 {
			args = append(args, "-p", itoa(s.P))
		}
		if s.Workload == S3 {
			args = append(args, base+"/"+sourceName, dest)
		} else {
			args = append(args, "file://"+r.source, base+"/"+key)
		}
	case S3Client:
		conf, err := r.awsConfig(s.P)
		if err != nil {
			return err
		}
		path, env = r.aws, append(r.s3.env(), "AWS_CONFIG_FILE="+conf, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
		args = []string{"s3", "cp", "--only-show-errors", "--no-progress", "--endpoint-url", r.s3.endpoint}
		if s.Workload == S3 {
			args = append(args, "s3://"+s3Bucket+"/"+sourceName, dest)
		} else {
			args = append(args, r.source, "s3://"+s3Bucket+"/"+key)
		}
	default:
		return fmt.Errorf("bench: %s has no S3 run", s.Impl)
	}
	var meters []*meter
	defer func() {
		for _, m := range meters {
			m.stopWatch()
		}
	}()
	for _, srv := range servers {
		m, err := startMeter(srv, false)
		if err != nil {
			return err
		}
		meters = append(meters, m)
	}
	u, _, cerr := runClient(ctx, r.cfg.Timeout, env, path, args...)
	var merr error
	for _, m := range meters {
		cpu, rss, err := m.end(ctx)
		merr = errors.Join(merr, err)
		s.ServerCPU += cpu
		s.ServerRSS += rss
	}
	if cerr != nil {
		for _, srv := range servers {
			cerr = errors.Join(cerr, srv.alive())
		}
		return cerr
	}
	if merr != nil {
		return merr
	}
	s.Wall, s.ClientCPU, s.ClientRSS, s.Machine = u.wall, u.cpu, u.rss, u.machine
	s.Gbps = bitRate(s.Bytes, s.Wall) / 1e9
	var size int64
	if s.Workload == S3 {
		fi, err := os.Stat(dest)
		if err != nil {
			return fmt.Errorf("bench: the copy: %w", err)
		}
		size = fi.Size()
	} else {
		o, err := r.s3.client.StatObject(ctx, s3Bucket, key, minio.StatObjectOptions{})
		if err != nil {
			return fmt.Errorf("bench: the uploaded object %s: %w", key, err)
		}
		size = o.Size
	}
	if size != s.Bytes {
		return fmt.Errorf("bench: the copy has %d bytes, want %d", size, s.Bytes)
	}
	return nil
}
