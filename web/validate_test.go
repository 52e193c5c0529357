package web

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// countingProxy forwards loopback connections to addr and counts them.
func countingProxy(t *testing.T, addr string) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Go(func() { io.Copy(s, c); s.Close() })
			wg.Go(func() { io.Copy(c, s); c.Close() })
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String(), &n
}

// TestBadInputIs400: names and paths with control characters, or too
// long, are answered 400 with a JSON error, before any server is
// contacted (a NUL in dstDir was answered 502).
func TestBadInputIs400(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	writeFile(t, filepath.Join(ta.root, "a.txt"), []byte("a"))
	addr, dials := countingProxy(t, strings.TrimPrefix(f.url, "ftp://"))
	c := ta.client(t)
	c.login("alice")
	local := c.open("file://" + ta.root)
	remote := c.open("ftp://" + addr + "/")
	before := dials.Load()
	long := strings.Repeat("d/", maxPathBytes)
	for _, tt := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/jobs", copyRequest{Src: local.ID, SrcDir: ta.root, Names: []string{"a.txt"}, Dst: remote.ID, DstDir: "/in\x00x"}},
		{"POST", "/api/advice", copyRequest{Src: local.ID, SrcDir: ta.root, Names: []string{"a.txt"}, Dst: remote.ID, DstDir: "/in\x1b[2J"}},
		{"POST", "/api/jobs", copyRequest{Src: remote.ID, SrcDir: "/\r\nDELE x", Names: []string{"a.txt"}, Dst: local.ID, DstDir: ta.root}},
		{"POST", "/api/jobs", copyRequest{Src: local.ID, SrcDir: ta.root, Names: []string{"a\x00.txt"}, Dst: remote.ID, DstDir: "/"}},
		{"POST", "/api/jobs", copyRequest{Src: local.ID, SrcDir: ta.root, Names: []string{"a.txt"}, Dst: remote.ID, DstDir: long}},
		{"POST", "/api/mkdir", fileOpRequest{EP: remote.ID, Dir: "/", Name: "x\x7f"}},
		{"POST", "/api/mkdir", fileOpRequest{EP: remote.ID, Dir: "/", Name: strings.Repeat("n", maxNameBytes+1)}},
		{"POST", "/api/rename", fileOpRequest{EP: remote.ID, Dir: "/", Name: "a", To: "b\u009b"}},
		{"POST", "/api/delete", fileOpRequest{EP: remote.ID, Dir: "/x\x00", Name: "a"}},
		{"POST", "/api/checksum", fileOpRequest{EP: remote.ID, Dir: "/\x01", Name: "a"}},
		{"POST", "/api/endpoints", openRequest{URL: "ftp://" + addr + "/a\x00b"}},
		{"GET", "/api/list?ep=" + remote.ID + "&path=" + url.QueryEscape("/a\x00b"), nil},
		{"GET", "/api/list?ep=" + remote.ID + "&path=" + url.QueryEscape("/a\xffb"), nil},
	} {
		code, msg := c.do(tt.method, tt.path, tt.body, nil)
		if code != http.StatusBadRequest || msg == "" {
			req := fmt.Sprintf("%s %s %+q", tt.method, tt.path, tt.body)
			if len(req) > 300 {
				req = req[:300] + "..."
			}
			if len(msg) > 300 {
				msg = msg[:300] + "..."
			}
			t.Errorf("%s: %d %q, want 400 with an error", req, code, msg)
		}
	}
	if n := dials.Load() - before; n != 0 {
		t.Errorf("the server was contacted %d times for bad requests", n)
	}
	// Good names still pass, UTF-8 ones among them.
	c.must("POST", "/api/mkdir", fileOpRequest{EP: remote.ID, Dir: "/", Name: "données-日本"}, nil)
	var l listReply
	c.must("GET", "/api/list?ep="+remote.ID+"&path="+url.QueryEscape("/données-日本"), nil, &l)
}
