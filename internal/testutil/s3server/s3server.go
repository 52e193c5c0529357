// Package s3server starts a private S3 server for tests that need a real
// one: SeaweedFS ("weed mini": master, volume, filer and S3 gateway in one
// process) on loopback ports it picks, with one access key, and a bucket.
//
// The weed binary is found, in order, at $FERRY_WEED, in the cache
// directory ($XDG_CACHE_HOME or ~/.cache, then
// ferry-test/weed-<Version>/weed), or built there from SeaweedFS's Go
// module at Version (several minutes on two cores; "make deps" does it
// ahead, once per machine). A weed that can be neither found nor built
// fails the test rather than skipping it: a skip would hide a broken
// setup.
package s3server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the SeaweedFS module version built and run.
const Version = "v0.0.0-20261109003541-7506e5f91cd6"

// Module is SeaweedFS's Go module.
const Module = "github.com/seaweedfs/seaweedfs"

// The credentials of the server's one identity (an administrator).
const (
	AccessKey = "ferrytest"
	SecretKey = "ferrytest-secret-key"
	Region    = "us-east-1"
)

// Server is a running SeaweedFS with its S3 gateway.
type Server struct {
	// Endpoint is the S3 URL, "http://127.0.0.1:PORT".
	Endpoint string
	// Bucket is the bucket Start made.
	Bucket string
	// Dir is the server's data directory.
	Dir string
	// Log is the file the server's output goes to.
	Log string
}

// CacheDir is where the weed binary of Version is kept.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "ferry-test", "weed-"+Version), nil
}

var buildMu sync.Mutex

// Binary returns the path of a weed of Version, building it if needed.
func Binary() (string, error) {
	if p := os.Getenv("FERRY_WEED"); p != "" {
		return p, nil
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "weed")
	if fi, err := os.Stat(bin); err == nil && fi.Mode()&0o111 != 0 {
		return bin, nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Other test binaries may build at the same time: one takes the lock.
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := Build(bin); err != nil {
		return "", err
	}
	return bin, nil
}

// Build builds weed of Version into bin: it downloads the module (from
// the Go module proxy, like any module) and builds ./weed inside it; a
// plain "go install" is refused because SeaweedFS's go.mod has replace
// directives.
func Build(bin string) error {
	dl := exec.Command("go", "mod", "download", "-json", Module+"@"+Version)
	dl.Dir = os.TempDir() // outside any module: leaves no trace in go.mod
	dl.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=")
	out, err := dl.Output()
	if err != nil {
		return fmt.Errorf("s3server: go mod download %s@%s: %v\n%s", Module, Version, err, errText(err))
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("s3server: go mod download %s@%s: no directory (%v %s)", Module, Version, err, mod.Error)
	}
	tmp := bin + ".tmp"
	b := exec.Command("go", "build", "-o", tmp, "./weed")
	b.Dir = mod.Dir
	if out, err := b.CombinedOutput(); err != nil {
		return fmt.Errorf("s3server: building weed: %v\n%s", err, out)
	}
	return os.Rename(tmp, bin)
}

func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// freePorts returns n distinct loopback ports p such that p+10000 (where
// SeaweedFS puts each server's gRPC port) is free too.
func freePorts(n int) ([]int, error) {
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
			return nil, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		if p+10000 > 65535 {
			l.Close()
			continue
		}
		g, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			l.Close()
			continue
		}
		hold = append(hold, l, g)
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("s3server: no free port pairs")
	}
	return ports, nil
}

// Start starts a server with a bucket "ferry" and stops it (and removes
// its data) when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("s3server: %v", err)
	}
	s, stop, err := Launch(bin, t.TempDir(), "ferry")
	if err != nil {
		t.Fatalf("s3server: %v", err)
	}
	t.Cleanup(stop)
	return s
}

// Launch runs weed mini from bin with its data in dir, waits until its S3
// gateway answers, and makes bucket. stop ends the server. weed listens on
// more ports than it is given (each gRPC port is its service's port +
// 10000), which another process may take meanwhile: a start that fails on
// a port in use is tried again with new ports, at most three times.
func Launch(bin, dir, bucket string) (s *Server, stop func(), err error) {
	for attempt := 1; ; attempt++ {
		d := filepath.Join(dir, fmt.Sprintf("weed-%d", attempt))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
		s, stop, err = launchOnce(bin, d, bucket)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return s, stop, err
		}
	}
}

func launchOnce(bin, dir, bucket string) (s *Server, stop func(), err error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, nil, err
	}
	master, volume, filer, s3port := ports[0], ports[1], ports[2], ports[3]
	conf := fmt.Sprintf(`{"identities":[{"name":"ferry","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","List","Tagging","Write"]}]}`, AccessKey, SecretKey)
	confPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, nil, err
	}
	logPath := filepath.Join(dir, "weed.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, "mini",
		"-dir="+data,
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port="+strconv.Itoa(master),
		"-volume.port="+strconv.Itoa(volume),
		"-filer.port="+strconv.Itoa(filer),
		"-s3.port="+strconv.Itoa(s3port),
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.config="+confPath,
		"-webdav=false", "-admin.ui=false",
		"-master.telemetry=false",
		"-bucket="+bucket,
	)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+AccessKey, "AWS_SECRET_ACCESS_KEY="+SecretKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("starting %s mini: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
	}
	s = &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", s3port), Bucket: bucket, Dir: dir, Log: logPath}
	if err := s.wait(exited, 3*time.Minute); err != nil {
		stop()
		return nil, nil, err
	}
	return s, stop, nil
}

// wait polls until the bucket answers (the gateway is up, the filer
// reachable and the bucket made).
func (s *Server) wait(exited <-chan struct{}, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	c := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-exited:
			return fmt.Errorf("weed mini exited early; its log:\n%s", tail(s.Log))
		default:
		}
		// An unsigned HEAD of the bucket: 403 once the gateway and the
		// bucket are there (404 while the bucket is not made yet).
		if resp, err := c.Head(s.Endpoint + "/" + s.Bucket); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusForbidden {
				if err := s.ready(); err == nil {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("weed mini's S3 gateway not ready after %v; its log:\n%s", limit, tail(s.Log))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ready makes sure a signed write and read work (the volume server may
// register after the gateway answers).
func (s *Server) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return probe(ctx, s)
}

func tail(p string) string {
	b, _ := os.ReadFile(p)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// Env returns the AWS variables that point a client at s.
func (s *Server) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s.Endpoint,
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_REGION=" + Region,
	}
}

// trimScheme returns host:port of an http URL.
func trimScheme(u string) string { return strings.TrimPrefix(u, "http://") }
