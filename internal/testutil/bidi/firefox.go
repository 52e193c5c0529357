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

// Executables are the names Firefox is looked up by, Debian's first.
var Executables = []string{"firefox-esr", "firefox"}

// listening matches the line Firefox prints once its WebDriver BiDi
// server listens.
var listening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

// prefs go into the profile's user.js: no first-run pages, no update or
// telemetry traffic, no experiments: less to do at start-up, when the
// remote agent waits for the idle start-up tasks before it opens a
// session. Firefox sets the rest of what automation needs
// itself when the remote agent is on (remote.prefs.recommended).
const prefs = `user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("browser.aboutwelcome.enabled", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.disabledForTesting", true);
user_pref("browser.safebrowsing.update.enabled", false);
user_pref("app.normandy.enabled", false);
user_pref("app.shield.optoutstudies.enabled", false);
user_pref("messaging-system.rsexperimentloader.enabled", false);
user_pref("browser.newtabpage.enabled", false);
user_pref("browser.startup.page", 0);
user_pref("extensions.pocket.enabled", false);
user_pref("browser.discovery.enabled", false);
user_pref("media.gmp-manager.updateEnabled", false);
`

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
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(prefs), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &watcher{found: make(chan string, 1)}
	cmd := exec.Command(exe,
		"--headless", "--no-remote", "--profile", profile,
		"--remote-debugging-port", "0", "--remote-allow-origins", Origin,
		"--window-size", "1400,900", "about:blank")
	// Its own home, so that nothing is written to the user's.
	cmd.Env = append(os.Environ(), "HOME="+dir, "MOZ_CRASHREPORTER_DISABLE=1", "MOZ_HEADLESS=1")
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own, so that the content processes are
	// killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("bidi: start %s: %v", exe, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	kill := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	var url string
	select {
	case url = <-out.found:
	case <-exited:
		t.Fatalf("bidi: %s exited before listening; output %q", exe, out.String())
	case <-time.After(StartTimeout):
		kill()
		t.Fatalf("bidi: %s did not listen within %v; output %q", exe, StartTimeout, out.String())
	}
	p := &Page{t: t}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	conn, err := Dial(ctx, url+"/session", p.event)
	if err != nil {
		kill()
		t.Fatalf("%v; output %q", err, out.String())
	}
	p.conn = conn
	t.Cleanup(func() {
		// A clean exit first, then the group, whatever is left of it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if conn.Call(ctx, "browser.close", nil, nil) == nil {
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
			}
		}
		conn.Close()
		kill()
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
	if err != nil {
		t.Fatal(err)
	}
	p.Context = tree.Contexts[0].Context
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
