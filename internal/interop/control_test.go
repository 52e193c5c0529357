package interop

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// replyTimeout bounds each read of a reply; generous, so that a slow
// machine never fails a test that only counts replies.
const replyTimeout = 30 * time.Second

// ctl is a raw control connection to a server, speaking FTP by hand.
type ctl struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

// dial connects to addr; it does not read the greeting.
func dial(t testing.TB, addr string) *ctl {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, replyTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &ctl{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// greeted dials addr and expects the 220 greeting.
func greeted(t testing.TB, addr string) *ctl {
	t.Helper()
	c := dial(t, addr)
	if code, text, err := c.reply(); code != 220 {
		t.Fatalf("greeting: %d %q (%v), want 220", code, text, err)
	}
	return c
}

// reply reads one reply, single- or multi-line (RFC 959 §4.2), and
// returns its code and text (the lines joined by newlines).
func (c *ctl) reply() (int, string, error) {
	c.conn.SetReadDeadline(time.Now().Add(replyTimeout))
	var text []string
	first, err := c.r.ReadString('\n')
	if err != nil {
		return 0, first, err
	}
	first = strings.TrimRight(first, "\r\n")
	text = append(text, first)
	if len(first) < 4 {
		return 0, first, errors.New("short reply line")
	}
	code, err := strconv.Atoi(first[:3])
	if err != nil {
		return 0, first, errors.New("reply without a code")
	}
	if first[3] == '-' {
		for {
			l, err := c.r.ReadString('\n')
			if err != nil {
				return 0, strings.Join(text, "\n"), err
			}
			l = strings.TrimRight(l, "\r\n")
			text = append(text, l)
			if strings.HasPrefix(l, first[:3]+" ") {
				break
			}
		}
	}
	return code, strings.Join(text, "\n"), nil
}

// cmd sends line and returns the reply's code and text; a broken
// connection fails the test.
func (c *ctl) cmd(line string) (int, string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(replyTimeout))
	if _, err := io.WriteString(c.conn, line+"\r\n"); err != nil {
		c.t.Fatalf("send %.40q: %v", line, err)
	}
	code, text, err := c.reply()
	if err != nil {
		c.t.Fatalf("reply to %.40q: %v (read %q)", line, err, text)
	}
	return code, text
}

// expect sends line and fails the test unless the reply has code want.
func (c *ctl) expect(line string, want int) {
	c.t.Helper()
	if code, text := c.cmd(line); code != want {
		c.t.Errorf("%.60q → %q, want %d", line, text, want)
	}
}

// login logs in anonymously.
func (c *ctl) login() {
	c.t.Helper()
	if code, text := c.cmd("USER anonymous"); code != 331 && code != 230 {
		c.t.Fatalf("USER anonymous → %q", text)
	} else if code == 331 {
		c.expect("PASS interop@", 230)
	}
}

// TestControlBadInput sends ferry serve commands it must refuse, each on
// a fresh session, and checks the reply code and that the session still
// answers NOOP afterwards.
func TestControlBadInput(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "file.txt"), "content\n")
	if err := os.Symlink("/etc", filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	srv := startFerry(t, root)
	tests := []struct {
		name  string
		login bool
		pre   []string // commands sent first; each must succeed (< 400)
		line  string
		want  int
	}{
		{name: "unknown verb", login: true, line: "XYZZY now", want: 500},
		{name: "RETR without path", login: true, line: "RETR", want: 501},
		{name: "RNTO without RNFR", login: true, line: "RNTO x", want: 503},
		{name: "LIST before login", line: "LIST", want: 530},
		{name: "RETR before login", line: "RETR /file.txt", want: 530},
		{name: "RETR out of the root", login: true, pre: []string{"TYPE I", "PASV"}, line: "RETR /../../etc/passwd", want: 550},
		{name: "RETR through a link out of the root", login: true, pre: []string{"TYPE I", "PASV"}, line: "RETR /escape/passwd", want: 550},
		{name: "CWD out of the root", login: true, line: "CWD ../../../../etc", want: 550},
		{name: "100 KB line", login: true, line: "NOOP " + strings.Repeat("x", 100<<10), want: 500},
		{name: "100 KB path", login: true, line: "RETR /" + strings.Repeat("a", 100<<10), want: 500},
		{name: "PORT bounce", login: true, line: "PORT 10,1,2,3,4,5", want: 501},
		{name: "EPRT bounce", login: true, line: "EPRT |1|10.1.2.3|1029|", want: 501},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := greeted(t, srv.addr)
			if tt.login {
				c.login()
			}
			for _, p := range tt.pre {
				if code, text := c.cmd(p); code >= 400 {
					t.Fatalf("%s → %q", p, text)
				}
			}
			c.expect(tt.line, tt.want)
			c.expect("NOOP", 200)
		})
	}
}

// TestControlCWDStaysInRoot checks that "/.." leads back to the root: the
// served directory's parent is invisible.
func TestControlCWDStaysInRoot(t *testing.T) {
	srv := startFerry(t, t.TempDir())
	c := greeted(t, srv.addr)
	c.login()
	c.expect("CWD /..", 250)
	if code, text := c.cmd("PWD"); code != 257 || !strings.Contains(text, `"/"`) {
		t.Errorf(`PWD after CWD /.. → %q, want 257 "/"`, text)
	}
}

// TestControlMaxSessions checks that -max-sessions 1 turns a second
// session away with 421 while the first, logged in, still works. (A
// first session that has not logged in would make room for it.)
func TestControlMaxSessions(t *testing.T) {
	srv := startFerry(t, t.TempDir(), "-anonymous", "-max-sessions", "1")
	first := greeted(t, srv.addr)
	first.login()
	second := dial(t, srv.addr)
	code, text, err := second.reply()
	if code != 421 {
		t.Errorf("second session got %d %q (%v), want 421", code, text, err)
	}
	first.expect("NOOP", 200)
	first.expect("QUIT", 221)
	// Once the first session has ended, a new one is welcome again; the
	// server notices the end asynchronously, so allow it a moment.
	deadline := time.Now().Add(replyTimeout)
	for {
		c := dial(t, srv.addr)
		code, text, err := c.reply()
		if code == 220 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the first session ended: %d %q (%v), want 220", code, text, err)
		}
		c.conn.Close()
		time.Sleep(50 * time.Millisecond)
	}
}

// TestControlIdleTimeout checks that a silent session is closed with 421.
func TestControlIdleTimeout(t *testing.T) {
	srv := startFerry(t, t.TempDir(), "-anonymous", "-idle-timeout", "2s")
	c := greeted(t, srv.addr)
	c.login()
	start := time.Now()
	code, text, err := c.reply()
	if code != 421 {
		t.Fatalf("after silence: %d %q (%v), want 421", code, text, err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("421 after %v, want about 2s", waited)
	}
	// Then the server closes the connection.
	if _, _, err := c.reply(); !errors.Is(err, io.EOF) {
		t.Errorf("after 421: %v, want EOF", err)
	}
}

// TestServeStopsCleanly sends ferry serve SIGTERM, idle and with a
// logged-in session, and expects exit status 0 every time.
func TestServeStopsCleanly(t *testing.T) {
	for i := range 5 {
		srv := startFerry(t, t.TempDir())
		if i%2 == 1 {
			c := greeted(t, srv.addr)
			c.login()
		}
		if r := srv.stop(); r.code != 0 {
			t.Errorf("run %d: ferry serve after SIGTERM: exit status %d (%v); stderr:\n%s", i, r.code, r.err, srv.log)
		}
	}
}

// TestServeRefusesSecondListener checks that a taken port is an error
// (exit status 1), not a hang.
func TestServeRefusesSecondListener(t *testing.T) {
	srv := startFerry(t, t.TempDir())
	r := run(t, "", "", ferryBin, "serve", "-listen", srv.addr, "-root", t.TempDir(), "-anonymous")
	if r.code != 1 || !strings.Contains(r.stderr, "address already in use") {
		t.Errorf("ferry serve on a taken port: %v", r)
	}
}

// TestServeConfigFile starts ferry serve with a -config file and checks
// that its keys take effect.
func TestServeConfigFile(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "ferry.conf")
	writeFile(t, conf, "# a comment\n\nanonymous true\nmax-sessions 1\nport-range 61100,61199\n")
	srv := startFerry(t, t.TempDir(), "-config", conf)
	first := greeted(t, srv.addr)
	first.login()
	if code, text, err := dial(t, srv.addr).reply(); code != 421 {
		t.Errorf("second session with max-sessions 1 in the config: %d %q (%v), want 421", code, text, err)
	}
	code, text := first.cmd("PASV")
	if code != 227 {
		t.Fatalf("PASV → %q", text)
	}
	// 227 Entering Passive Mode (h1,h2,h3,h4,p1,p2).
	_, hostPort, _ := strings.Cut(text, "(")
	hostPort, _, _ = strings.Cut(hostPort, ")")
	f := strings.Split(hostPort, ",")
	if len(f) != 6 {
		t.Fatalf("PASV → %q: no host-port", text)
	}
	p1, _ := strconv.Atoi(f[4])
	p2, _ := strconv.Atoi(f[5])
	if port := p1<<8 | p2; port < 61100 || port > 61199 {
		t.Errorf("PASV port %d outside port-range 61100,61199", port)
	}
	// Anonymous without anonymous-write is read-only.
	if code, text := first.cmd("MKD /newdir"); code < 500 {
		t.Errorf("MKD as a read-only anonymous user → %q, want a 5xx refusal", text)
	}
}
