//go:build linux

package privsep

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/dsitest"
	"github.com/ferrygrid/ferry/dsi/posix"
)

const testAccount = "ferrypriv"

var (
	helperOnce sync.Once
	helperDir  string // removed by TestMain
	helperExe  string
	helperErr  error
)

// testExe returns a copy of the test binary that the test account can
// execute (the go build directory is private to root).
func testExe(t *testing.T) string {
	t.Helper()
	helperOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			helperErr = err
			return
		}
		data, err := os.ReadFile(self)
		if err != nil {
			helperErr = err
			return
		}
		if helperDir, err = os.MkdirTemp("/tmp", "ferrypriv-exe-"); err != nil {
			helperErr = err
			return
		}
		helperExe = filepath.Join(helperDir, "privsep.test")
		if err := os.WriteFile(helperExe, data, 0o755); err != nil {
			helperErr = err
			return
		}
		helperErr = os.Chmod(helperDir, 0o755)
	})
	if helperErr != nil {
		t.Fatal(helperErr)
	}
	return helperExe
}

// account returns the test account, creating it when missing. Tests that
// switch users need root.
func account(t *testing.T) (uid, gid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	u, err := user.Lookup(testAccount)
	if err != nil {
		out, err := exec.Command("useradd", "-M", "-s", "/usr/sbin/nologin", testAccount).CombinedOutput()
		if err != nil {
			t.Skipf("cannot create test account: %v: %s", err, out)
		}
		if u, err = user.Lookup(testAccount); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// servedDir returns a fresh directory under /tmp owned by the test
// account, reachable by it.
func servedDir(t *testing.T, uid, gid int) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ferrypriv-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startUser starts a helper as the test account over a fresh directory.
func startUser(t *testing.T) (*FS, string) {
	t.Helper()
	uid, gid := account(t)
	dir := servedDir(t, uid, gid)
	f, err := Start(t.Context(), testExe(t), dir, testAccount)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, dir
}

// inProcess serves a fresh directory with Serve in this process, as the
// current user.
func inProcess(t *testing.T) (*FS, string) {
	t.Helper()
	dir := t.TempDir()
	return serveDir(t, dir), dir
}

// serveDir serves dir with Serve in this process, as the current user.
func serveDir(t *testing.T, dir string) *FS {
	t.Helper()
	client, server := socketPair(t)
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), server, dir) }()
	f := newFS(client, nil, "self")
	t.Cleanup(func() {
		f.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		server.Close()
	})
	return f
}

// socketPair returns the client end as a conn and the helper end as a file.
func socketPair(t *testing.T) (*net.UnixConn, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	client := os.NewFile(uintptr(fds[0]), "client")
	defer client.Close()
	c, err := net.FileConn(client)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "helper")
}

func TestConformanceInProcess(t *testing.T) {
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		f, _ := inProcess(t)
		return f
	})
}

func TestConformanceAsUser(t *testing.T) {
	account(t)
	dsitest.Run(t, func(t *testing.T) dsi.Storage {
		f, _ := startUser(t)
		return f
	})
}

func TestStartRefuses(t *testing.T) {
	ctx := t.Context()
	if _, err := Start(ctx, "/nonexistent", "/tmp", "no-such-user-ferry"); err == nil {
		t.Error("Start(unknown account) succeeded")
	}
	if _, err := Start(ctx, "/nonexistent", "/tmp", "root"); err == nil {
		t.Error("Start(root) succeeded without AllowRoot")
	}
	if _, err := Start(ctx, "/nonexistent", "tmp", testAccount); err == nil {
		t.Error("Start(relative root) succeeded")
	}
	if os.Geteuid() == 0 {
		account(t)
		if _, err := Start(ctx, "/nonexistent/ferry", "/tmp", testAccount); err == nil {
			t.Error("Start(missing binary) succeeded")
		}
	}
}

func TestPermissionsAsUser(t *testing.T) {
	f, dir := startUser(t)
	ctx := t.Context()
	uid, gid := account(t)

	// A root-owned 0600 file: the account may neither read nor write it.
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := f.Open(ctx, "/secret"); !errors.Is(err, dsi.ErrPermission) {
		if err == nil {
			r.Close()
		}
		t.Errorf("Open(root 0600) = %v; want ErrPermission", err)
	}
	if w, err := f.Create(ctx, "/secret", dsi.CreateOptions{Size: -1}); !errors.Is(err, dsi.ErrPermission) {
		if err == nil {
			w.Close()
		}
		t.Errorf("Create(root 0600) = %v; want ErrPermission", err)
	}
	var perr *Error
	if _, err := f.Open(ctx, "/secret"); !errors.As(err, &perr) || perr.Op != "open" || perr.Path != "/secret" {
		t.Errorf("Open error %#v; want *Error for open /secret", err)
	}

	// A root-owned directory: nothing can be made in it.
	if err := os.Mkdir(filepath.Join(dir, "rootdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if w, err := f.Create(ctx, "/rootdir/f", dsi.CreateOptions{Size: -1}); !errors.Is(err, dsi.ErrPermission) {
		if err == nil {
			w.Close()
		}
		t.Errorf("Create in root's directory = %v; want ErrPermission", err)
	}
	if err := f.Mkdir(ctx, "/rootdir/d", 0); !errors.Is(err, dsi.ErrPermission) {
		t.Errorf("Mkdir in root's directory = %v; want ErrPermission", err)
	}
	if err := f.Remove(ctx, "/secret"); err != nil {
		// The served root belongs to the account, so it may unlink.
		t.Errorf("Remove(/secret) in own directory: %v", err)
	}

	// The account's own directory: new entries belong to it.
	w, err := f.Create(ctx, "/mine", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Mkdir(ctx, "/sub", 0); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mine", "sub"} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, name), &st); err != nil {
			t.Fatal(err)
		}
		if int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s owned by %d:%d; want %d:%d", name, st.Uid, st.Gid, uid, gid)
		}
	}
	fi, err := f.Stat(ctx, "/mine")
	if err != nil || fi.Owner != testAccount || fi.UID != uid || fi.Size != 5 {
		t.Errorf("Stat(/mine) = %+v, %v; want owner %s, size 5", fi, err, testAccount)
	}
	// A link out of the root stays refused in the helper.
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if r, err := f.Open(ctx, "/escape"); err == nil {
		r.Close()
		t.Error("Open through a link leaving the root succeeded")
	}
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + i>>12)
	}
	return b
}

// TestZeroCopyAsUser moves data between passed descriptors and TCP
// sockets: sendfile(2) for reading, splice(2) for writing.
func TestZeroCopyAsUser(t *testing.T) {
	f, dir := startUser(t)
	ctx := t.Context()
	data := pattern(5<<20 + 123)
	if err := os.WriteFile(filepath.Join(dir, "src"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	r, err := f.Open(ctx, "/src")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok := r.(*posix.Reader); !ok {
		t.Fatalf("Open returned %T; want *posix.Reader", r)
	}
	if r.Size() != int64(len(data)) {
		t.Errorf("Size = %d; want %d", r.Size(), len(data))
	}
	a, b := tcpPair(t)
	got := make(chan []byte, 1)
	go func() {
		buf, _ := io.ReadAll(b)
		got <- buf
	}()
	off, n := int64(1000), int64(len(data)-2000)
	m, err := r.(dsi.RangeWriterTo).WriteRangeTo(a, off, n)
	a.CloseWrite()
	if m != n || err != nil {
		t.Fatalf("WriteRangeTo = %d, %v; want %d", m, err, n)
	}
	if !bytes.Equal(<-got, data[off:off+n]) {
		t.Error("WriteRangeTo over TCP: wrong data")
	}

	w, err := f.Create(ctx, "/dst", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	c, d := tcpPair(t)
	sent := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		c.CloseWrite()
		sent <- err
	}()
	before := posix.SplicedBytes()
	m, err = w.(dsi.RangeReaderFrom).ReadRangeFrom(d, 0, int64(len(data)))
	if m != int64(len(data)) || err != nil {
		t.Fatalf("ReadRangeFrom = %d, %v", m, err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if spliced := posix.SplicedBytes() - before; spliced != int64(len(data)) {
		t.Errorf("splice(2) moved %d bytes; want %d", spliced, len(data))
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, "dst"))
	if err != nil || !bytes.Equal(onDisk, data) {
		t.Errorf("ReadRangeFrom over TCP: wrong data on disk (%v)", err)
	}
}

func TestHelperDeath(t *testing.T) {
	f, _ := startUser(t)
	ctx := t.Context()
	if _, err := f.Stat(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	// Calls in flight while the helper is killed either finish or fail
	// cleanly; none hangs.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				_, err := f.Stat(ctx, "/")
				if err != nil {
					if !errors.Is(err, ErrHelperExited) {
						t.Errorf("Stat during death: %v; want ErrHelperExited", err)
					}
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	if err := f.proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	_, err := f.ReadDir(ctx, "/")
	if !errors.Is(err, ErrHelperExited) {
		t.Fatalf("ReadDir after death: %v; want ErrHelperExited", err)
	}
	t.Logf("error after death: %v", err)
	if err := f.Close(); err != nil {
		t.Errorf("Close after death: %v", err)
	}
}

func TestCloseIdempotent(t *testing.T) {
	for _, start := range []struct {
		name string
		f    func(*testing.T) (*FS, string)
	}{{"InProcess", inProcess}, {"AsUser", startUser}} {
		t.Run(start.name, func(t *testing.T) {
			f, dir := start.f(t)
			ctx := t.Context()
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("kept"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := f.Open(ctx, "/f")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if _, err := f.Stat(ctx, "/f"); !errors.Is(err, ErrClosed) {
				t.Errorf("Stat after Close: %v; want ErrClosed", err)
			}
			// Open files outlive the storage.
			buf := make([]byte, 4)
			if n, err := r.ReadAt(buf, 0); n != 4 || string(buf) != "kept" {
				t.Errorf("ReadAt after Close = %d, %v", n, err)
			}
			if f.proc != nil && f.proc.ProcessState == nil {
				t.Error("helper not waited for")
			}
		})
	}
}

func TestInvalidNames(t *testing.T) {
	f, _ := inProcess(t)
	for _, name := range []string{"", "a", "/a/../b", "/a/", "//a", "/a\x00b", "/" + string(bytes.Repeat([]byte("x"), maxString))} {
		if _, err := f.Stat(t.Context(), name); !errors.Is(err, dsi.ErrInvalid) {
			t.Errorf("Stat(%q) = %v; want ErrInvalid", name, err)
		}
	}
	if err := f.Rename(t.Context(), "/a", "b"); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("Rename to a relative name: %v; want ErrInvalid", err)
	}
}

func TestBigDirectory(t *testing.T) {
	f, dir := inProcess(t)
	const n = 3000 // several packets
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)+string(bytes.Repeat([]byte("n"), 100))), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list, err := f.ReadDir(t.Context(), "/")
	if err != nil || len(list) != n {
		t.Fatalf("ReadDir = %d entries, %v; want %d", len(list), err, n)
	}
}

// fakeHelper is the helper end of a socket pair driven by the test.
type fakeHelper struct {
	t    *testing.T
	conn *net.UnixConn
}

func newFake(t *testing.T) (*FS, *fakeHelper) {
	client, server := socketPair(t)
	defer server.Close()
	c, err := net.FileConn(server)
	if err != nil {
		t.Fatal(err)
	}
	fh := &fakeHelper{t: t, conn: c.(*net.UnixConn)}
	f := newFS(client, nil, "fake")
	t.Cleanup(func() { f.Close(); fh.conn.Close() })
	return f, fh
}

// next reads one request header.
func (fh *fakeHelper) next() header {
	fh.t.Helper()
	buf := make([]byte, maxPacket)
	n, _, _, _, err := fh.conn.ReadMsgUnix(buf, nil)
	if err != nil {
		fh.t.Fatal(err)
	}
	h, _, err := parseHeader(buf[:n])
	if err != nil {
		fh.t.Fatal(err)
	}
	return h
}

func (fh *fakeHelper) reply(h header, body []byte, fds ...int) {
	fh.t.Helper()
	p := append(appendHeader(nil, h), body...)
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	if _, _, err := fh.conn.WriteMsgUnix(p, oob, nil); err != nil {
		fh.t.Fatal(err)
	}
}

func TestPendingCallsFailWhenHelperGoes(t *testing.T) {
	f, fh := newFake(t)
	errc := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := f.Stat(context.Background(), "/x")
			errc <- err
		}()
	}
	for range 3 {
		fh.next() // requests arrive; no reply
	}
	fh.conn.Close()
	for range 3 {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrHelperExited) {
				t.Errorf("pending Stat: %v; want ErrHelperExited", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("pending call hangs after the helper went away")
		}
	}
	if _, err := f.Stat(t.Context(), "/"); !errors.Is(err, ErrHelperExited) {
		t.Errorf("later Stat: %v; want ErrHelperExited", err)
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(ents)
}

func TestCancelReleasesLateDescriptor(t *testing.T) {
	f, fh := newFake(t)
	tmp, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	before := openFDs(t)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := f.Open(ctx, "/f")
		errc <- err
	}()
	h := fh.next()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Open after cancel: %v", err)
	}
	fh.reply(h, nil, int(tmp.Fd())) // too late
	// The conversation goes on, and the late descriptor is closed.
	go func() {
		h := fh.next()
		fh.reply(h, appendFileInfo(nil, dsi.FileInfo{Name: "/", Mode: os.ModeDir | 0o755}))
	}()
	if _, err := f.Stat(t.Context(), "/"); err != nil {
		t.Fatal(err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open, %d before: the late one leaked", after, before)
	}
}

func TestMisbehavingHelper(t *testing.T) {
	t.Run("TwoDescriptors", func(t *testing.T) {
		f, fh := newFake(t)
		go func() {
			h := fh.next()
			fh.reply(h, nil, 0, 1)
		}()
		if _, err := f.Open(t.Context(), "/f"); !errors.Is(err, ErrHelperExited) || !errors.Is(err, errMalformed) {
			t.Errorf("Open with two descriptors: %v", err)
		}
	})
	t.Run("NotARegularFile", func(t *testing.T) {
		f, fh := newFake(t)
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(p[0])
		defer syscall.Close(p[1])
		go func() {
			h := fh.next()
			fh.reply(h, nil, p[0])
		}()
		if r, err := f.Open(t.Context(), "/f"); !errors.Is(err, dsi.ErrInvalid) {
			if err == nil {
				r.Close()
			}
			t.Errorf("Open passed a pipe: %v; want ErrInvalid", err)
		}
	})
	t.Run("BadVersion", func(t *testing.T) {
		f, fh := newFake(t)
		go func() {
			fh.next()
			fh.conn.WriteMsgUnix([]byte{9, opStat, 0, 0, 0, 0, 0, 1}, nil, nil)
		}()
		if _, err := f.Stat(t.Context(), "/"); !errors.Is(err, ErrHelperExited) {
			t.Errorf("Stat with a bad reply: %v", err)
		}
	})
	t.Run("WrongOp", func(t *testing.T) {
		f, fh := newFake(t)
		go func() {
			h := fh.next()
			h.op = opMkdir
			fh.reply(h, nil)
		}()
		if _, err := f.Stat(t.Context(), "/"); !errors.Is(err, ErrHelperExited) {
			t.Errorf("Stat answered with another op: %v", err)
		}
	})
	t.Run("WrongIdentity", func(t *testing.T) {
		f, fh := newFake(t)
		go func() {
			h := fh.next()
			fh.reply(h, appendU32(appendU32(nil, 0), 0))
		}()
		if err := f.hello(t.Context(), 1234, 1234); err == nil {
			t.Error("hello accepted a helper running as root")
		}
	})
}

func TestServeRejectsBadRequests(t *testing.T) {
	client, server := socketPair(t)
	defer server.Close()
	defer client.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), server, t.TempDir()) }()
	// A request with an unclean name gets ErrInvalid.
	p := appendString(appendU32(appendHeader(nil, header{op: opStat, id: 7}), baseRoot), "/a/../..")
	if _, _, err := client.WriteMsgUnix(p, nil, nil); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, maxPacket)
	n, _, _, _, err := client.ReadMsgUnix(buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := parseHeader(buf[:n])
	if err != nil || h.id != 7 || h.flags != flagError {
		t.Fatalf("reply %+v, %v", h, err)
	}
	if err := decodeError(body, "stat", "x"); !errors.Is(err, dsi.ErrInvalid) {
		t.Errorf("unclean name: %v; want ErrInvalid", err)
	}
	// A malformed packet ends the conversation.
	if _, _, err := client.WriteMsgUnix([]byte{version, 0xff, 0, 0, 0, 0, 0, 1}, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, errMalformed) {
			t.Errorf("Serve after a malformed packet: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop on a malformed packet")
	}
}
