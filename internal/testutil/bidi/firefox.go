package bidi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/syncbuf"
)

// StartTimeout bounds how long Firefox may take to start and open a
// session. It is long: on a loaded machine a cold start takes minutes
// (a session waits for Firefox's idle start-up tasks).
var StartTimeout = 10 * time.Minute

// Width and Height are the size of the page's viewport.
const Width, Height = 1400, 900

// Executables are the names Firefox is looked up by, Debian's first.
var Executables = []string{"firefox-esr", "firefox"}

// listening matches the line Firefox prints once its WebDriver BiDi
// server listens.
var listening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

// LogEntry is a console message or an uncaught error of the page
// (a log.entryAdded event).
type LogEntry struct {
	Type  string `json:"type"`  // "console" or "javascript" (an uncaught error)
	Level string `json:"level"` // "debug", "info", "warn" or "error"
	Text  string `json:"text"`
}

// Firefox starts a headless Firefox with a fresh profile, opens a
// WebDriver BiDi session on it and returns a Page on its first tab.
// Firefox and its child processes are killed when the test ends. A
// missing Firefox fails the test: the project's test command
// (scripts/deps.sh) installs firefox-esr, so a skip would hide a broken
// setup.
func Firefox(t testing.TB) *Page {
	t.Helper()
	var exe string
	for _, name := range Executables {
		if p, err := exec.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Fatalf("bidi: Firefox is required (%v not on PATH; scripts/deps.sh installs firefox-esr)", Executables)
	}
	dir := t.TempDir()
	profile := filepath.Join(dir, "profile")
	if err := os.Mkdir(profile, 0o700); err != nil {
		t.Fatal(err)
	}
	out := &watcher{found: make(chan string, 1)}
	// No preferences of our own: with the remote agent on, Firefox sets
	// those automation needs (remote.prefs.recommended).
	cmd := exec.Command(exe,
		"--headless", "--no-remote", "--profile", profile,
		"--remote-debugging-port", "0", "--remote-allow-origins", Origin,
		"about:blank")
	// Its own home, so that nothing is written to the user's.
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own, so that the content processes are
	// killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("bidi: start %s: %v", exe, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	// Last of all, the group, whatever is left of it.
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	var url string
	select {
	case url = <-out.found:
	case <-exited:
		t.Fatalf("bidi: %s exited before listening; output %q", exe, out.String())
	case <-time.After(StartTimeout):
		t.Fatalf("bidi: %s did not listen within %v; output %q", exe, StartTimeout, out.String())
	}
	t.Logf("bidi: %s listening on %s after %v", exe, url, time.Since(start).Round(time.Second))
	p := &Page{t: t}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	conn, err := Dial(ctx, url+"/session", p.event)
	if err != nil {
		t.Fatalf("%v; output %q", err, out.String())
	}
	p.conn = conn
	t.Cleanup(func() {
		// A clean exit first.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if conn.Call(ctx, "browser.close", nil, nil) == nil {
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
			}
		}
		conn.Close()
	})
	var tree struct {
		Contexts []struct {
			Context string `json:"context"`
		} `json:"contexts"`
	}
	err = conn.Call(ctx, "session.new", map[string]any{"capabilities": map[string]any{}}, nil)
	if err == nil {
		err = conn.Call(ctx, "session.subscribe", map[string]any{"events": []string{"log.entryAdded"}}, nil)
	}
	if err == nil {
		err = conn.Call(ctx, "browsingContext.getTree", map[string]any{"maxDepth": 0}, &tree)
	}
	if err == nil && len(tree.Contexts) == 0 {
		err = fmt.Errorf("bidi: Firefox has no browsing context")
	}
	if err == nil {
		p.Context = tree.Contexts[0].Context
		err = conn.Call(ctx, "browsingContext.setViewport", map[string]any{
			"context": p.Context, "viewport": map[string]int{"width": Width, "height": Height}}, nil)
	}
	if err != nil {
		t.Fatalf("%v; output %q", err, out.String())
	}
	t.Logf("bidi: session open after %v", time.Since(start).Round(time.Second))
	return p
}

// event records the page's log entries.
func (p *Page) event(e Event) {
	if e.Method != "log.entryAdded" {
		return
	}
	var l LogEntry
	if json.Unmarshal(e.Params, &l) != nil {
		return
	}
	p.t.Logf("firefox %s %s: %s", l.Type, l.Level, l.Text)
	p.mu.Lock()
	p.logs = append(p.logs, l)
	p.mu.Unlock()
}

// watcher collects Firefox's output and reports, once, the address of
// its BiDi server.
type watcher struct {
	buf   syncbuf.Buffer
	once  sync.Once
	found chan string
}

func (w *watcher) Write(b []byte) (int, error) {
	w.buf.Write(b)
	if m := listening.FindStringSubmatch(w.buf.String()); m != nil {
		w.once.Do(func() { w.found <- m[1] })
	}
	return len(b), nil
}

func (w *watcher) String() string { return w.buf.String() }
