package web

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/bidi"
)

// The Firefox test drives Debian's firefox-esr (installed by
// scripts/deps.sh) over WebDriver BiDi, the protocol Firefox speaks
// itself; internal/testutil/bidi is the client. The steps read like
// the Chromium test's (browser_test.go).

// ffStep is one step of a Firefox test.
type ffStep func(p *bidi.Page) error

// ffRun runs steps, failing the test on error.
func ffRun(t *testing.T, p *bidi.Page, what string, steps ...ffStep) {
	t.Helper()
	start := time.Now()
	for _, s := range steps {
		if err := s(p); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
}

func ffNavigate(url string) ffStep { return func(p *bidi.Page) error { return p.Navigate(url) } }
func ffVisible(sel string) ffStep  { return func(p *bidi.Page) error { return p.WaitVisible(sel) } }
func ffClick(sel string) ffStep    { return func(p *bidi.Page) error { return p.Click(sel) } }
func ffUntil(cond string) ffStep   { return func(p *bidi.Page) error { return p.Wait(cond) } }

// ffType types v into the field sel, key by key.
func ffType(sel, v string) ffStep { return func(p *bidi.Page) error { return p.Type(sel, v) } }

// ffClear empties the field sel.
func ffClear(sel string) ffStep {
	return func(p *bidi.Page) error {
		return p.Eval(`(document.querySelector(`+jsString(sel)+`).value = "")`, nil)
	}
}

func ffText(t *testing.T, p *bidi.Page, sel string) string {
	t.Helper()
	s, err := p.Text(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ffOpenPane types url into pane's address field and opens it.
func ffOpenPane(pane, url string) ffStep {
	return func(p *bidi.Page) error {
		if err := p.Type(`[data-pane="`+pane+`"] .url`, url); err != nil {
			return err
		}
		return p.Click(`[data-pane="` + pane + `"] .open-button`)
	}
}

// ffDrag drags the entry name of pane from to pane to: a native drag
// with the mouse (input.performActions) first. Headless Firefox 153
// does not turn pointer actions into HTML5 drag events (seen here; other
// projects report it doing so only some of the time), so when no dialog
// opens the drag is made with drag events dispatched in the page
// (dragJS, which the Chromium test also uses), carrying a real
// DataTransfer through the page's dragstart, dragover and drop handlers.
func ffDrag(t *testing.T, from, name, to string) ffStep {
	return func(p *bidi.Page) error {
		if err := p.Drag(entrySel(from, name)+" .size", `[data-pane="`+to+`"] .listing`); err != nil {
			return err
		}
		if p.WaitFor(bidi.VisibleJS("#advice-dialog[open]"), 20*time.Second) == nil {
			t.Logf("Firefox dragged %s natively", name)
			return nil
		}
		t.Logf("Firefox made no drag of the mouse actions; dispatching drag events in the page")
		var res string
		if err := p.Eval(dragJS+`(`+jsString(from)+`, `+jsString(name)+`, `+jsString(to)+`)`, &res); err != nil {
			return err
		}
		if res != "ok" {
			return fmt.Errorf("synthesized drag: %s", res)
		}
		return nil
	}
}

// TestFirefoxCopy drives the main path in a real Firefox, with real
// mouse and keyboard input: a wrong password and its message, the
// login, a Ferry server in the left pane and file:// in the right, a
// file copied with the keyboard path (select, Copy) and a directory
// dragged across, each after the advisor's dialog with an ETA, progress
// to 100 % and byte-identical copies; the page throws no error.
func TestFirefoxCopy(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	f.slow.Store(false)
	data := randomData(8<<20 + 3)
	writeFile(t, filepath.Join(f.dir, "a.bin"), data)
	writeFile(t, filepath.Join(f.dir, "tree", "x.txt"), []byte("x file"))
	// Within the advisor's factor of 64 of a.bin's size, so that a.bin's
	// record gives the drag an ETA.
	writeFile(t, filepath.Join(f.dir, "tree", "sub", "y.txt"), randomData(300<<10))
	p := bidi.Firefox(t)

	ffRun(t, p, "wrong password",
		ffNavigate(ta.srv.URL+"/"),
		ffVisible("#login-form"),
		ffType("#login-user", "alice"),
		ffType("#login-password", "not-her-password"),
		ffClick("#login-submit"),
		ffUntil(`document.querySelector("#login-error").textContent !== ""`),
	)
	if msg := ffText(t, p, "#login-error"); msg != "wrong user name or password" {
		t.Fatalf("wrong password message %q", msg)
	}
	ffRun(t, p, "log in",
		ffClear("#login-password"),
		ffType("#login-password", "alice-secret"),
		ffClick("#login-submit"),
		ffVisible("#browse-view"),
	)
	ffRun(t, p, "open the panes",
		ffOpenPane("left", f.url+"/"),
		ffVisible(entrySel("left", "a.bin")),
		ffOpenPane("right", "file://"+ta.root),
		ffUntil(`document.querySelector('[data-pane="right"]').dataset.path === `+jsString(ta.root)),
	)

	// The keyboard path: select, then Copy.
	ffRun(t, p, "copy a.bin with the button",
		ffClick(entrySel("left", "a.bin")+" .name"),
		ffClick(`[data-pane="left"] .copy`),
		ffVisible("#advice-dialog[open]"),
	)
	if eta := ffText(t, p, "#advice-eta"); eta == "" {
		t.Errorf("the dialog shows no ETA")
	}
	ffRun(t, p, "confirm and finish",
		ffClick("#advice-confirm"),
		ffVisible(`#jobs tr.job[data-state="done"]`),
		ffVisible(entrySel("right", "a.bin")),
	)
	if msg := ffText(t, p, `#jobs tr.job[data-state="done"] .pct`); msg != "100 %" {
		t.Errorf("finished job shows %q", msg)
	}
	if got, err := os.ReadFile(filepath.Join(ta.root, "a.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("a.bin: %d bytes, %v; want the %d bytes sent", len(got), err, len(data))
	}
	// The record feeds the advisor of the next copy: its ETA is known.
	waitRecords(t, ta.hist, 1)

	ffRun(t, p, "drag the tree across",
		ffDrag(t, "left", "tree", "right"),
		ffVisible("#advice-dialog[open]"),
	)
	eta, what := ffText(t, p, "#advice-eta"), ffText(t, p, "#advice-what")
	if eta == "" || eta == "unknown" || !strings.HasPrefix(what, "2 file(s)") {
		t.Errorf("drag dialog: ETA %q, %q", eta, what)
	}
	ffRun(t, p, "confirm the drag",
		ffClick("#advice-confirm"),
		ffUntil(`document.querySelectorAll('#jobs tr.job[data-state="done"]').length === 2`),
		ffVisible(entrySel("right", "tree")),
	)
	if msg := ffText(t, p, `#jobs tr.job:first-child .pct`); msg != "100 %" {
		t.Errorf("finished drag shows %q", msg)
	}
	for _, n := range []string{"tree/x.txt", "tree/sub/y.txt"} {
		want, _ := os.ReadFile(filepath.Join(f.dir, n))
		if got, err := os.ReadFile(filepath.Join(ta.root, n)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, or not the same bytes", n, err)
		}
	}
	for _, l := range p.Logs() {
		if l.Type == "javascript" {
			t.Errorf("the page threw in Firefox: %s", l.Text)
		}
	}
}
