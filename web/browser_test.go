package web

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/testutil/gct"
	"github.com/ferrygrid/ferry/internal/testutil/gctgsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

// browser starts a headless Chromium (Debian's chromium, installed by
// scripts/deps.sh) for the test and returns a tab's context; the browser
// is killed when the test ends. The test is skipped without chromium.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe, err := exec.LookPath("chromium")
	if err != nil {
		if exe, err = exec.LookPath("chromium-browser"); err != nil {
			t.Skip("chromium not installed (scripts/deps.sh installs it)")
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // tests run as root
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	)
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		bcancel()
		acancel()
		cancel()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

type step = chromedp.Action[chromedp.Void]

// run runs browser steps, failing the test on error.
func run(t *testing.T, ctx context.Context, what string, steps ...step) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs one browser action that returns a value.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, chromedp.Text(chromedp.CSS(sel)))
}

// until waits until the JavaScript expression is true.
func until(expr string) step {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))(ctx, tg)
		return chromedp.Void{}, err
	}
}

// setValue sets an input's value.
func setValue(sel, v string) step {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+jsString(sel)+`); e.value = `+jsString(v)+`; return true; })()`)(ctx, tg)
		return chromedp.Void{}, err
	}
}

// js evaluates a JavaScript expression that returns true.
func js(expr string) step {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](expr)(ctx, tg)
		return chromedp.Void{}, err
	}
}

func visible(sel string) step { return chromedp.WaitVisible(chromedp.CSS(sel)) }
func click(sel string) step   { return chromedp.Click(chromedp.CSS(sel)) }
func keys(sel, v string) step { return chromedp.SendKeys(chromedp.CSS(sel), v) }

// logIn loads ta's page and logs in as user with the password of
// testPasswords, until the panes show.
func logIn(ta *testApp, user string) step {
	return chromedp.Steps(
		chromedp.Navigate(ta.srv.URL+"/"),
		visible("#login-form"),
		keys("#login-user", user),
		keys("#login-password", testPasswords[user]),
		click("#login-submit"),
		visible("#browse-view"),
	)
}

// openPane types url into pane's address field and opens it.
func openPane(pane, url string) step {
	return chromedp.Steps(
		keys(`[data-pane="`+pane+`"] .url`, url),
		click(`[data-pane="`+pane+`"] .open-button`),
	)
}

// shot saves a screenshot of the page as docs/NAME.png when
// FERRY_WEB_SCREENSHOTS names a directory.
func shot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("FERRY_WEB_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
}

// dragJS drags the entry named name of pane from to pane to with
// synthesized HTML5 drag events carrying a DataTransfer (Chromium cannot
// be made to start a native drag headless).
const dragJS = `((from, name, to) => {
  const src = document.querySelector('[data-pane="' + from + '"] tr.entry[data-name="' + name + '"]');
  const dst = document.querySelector('[data-pane="' + to + '"] .listing');
  if (!src || !dst) return "no such entry or pane";
  const dt = new DataTransfer();
  const ev = (type, target) => { const e = new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: dt}); target.dispatchEvent(e); return e; };
  ev("dragstart", src);
  ev("dragenter", dst);
  if (!ev("dragover", dst).defaultPrevented) return "drop refused";
  ev("drop", dst);
  ev("dragend", src);
  return "ok";
})`

func entrySel(pane, name string) string {
	return `[data-pane="` + pane + `"] tr.entry[data-name="` + name + `"]`
}

// TestBrowserCopy drives the whole path in a real Chromium: a wrong
// password, the login, a Ferry server in the left pane and file:// in
// the right, a file copied with the keyboard path (select, Copy) and a
// directory dragged across, each after the advisor's dialog with an
// ETA, progress to 100 %, byte-identical copies, the history table, and
// a large transfer cancelled midway.
func TestBrowserCopy(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	data := randomData(8<<20 + 3)
	writeFile(t, filepath.Join(f.dir, "a.bin"), data)
	writeFile(t, filepath.Join(f.dir, "tree", "x.txt"), []byte("x file"))
	// The tree's mean file size (150 KiB) is within the advisor's
	// factor of 64 of a.bin's, so a.bin's record gives the drag an ETA.
	writeFile(t, filepath.Join(f.dir, "tree", "sub", "y.txt"), randomData(300<<10))
	writeFile(t, filepath.Join(f.dir, "slow.bin"), randomData(96<<20))
	ctx := browser(t)

	run(t, ctx, "wrong password",
		chromedp.Navigate(ta.srv.URL+"/"),
		visible("#login-form"),
		keys("#login-user", "alice"),
		keys("#login-password", "not-her-password"),
		click("#login-submit"),
		until(`document.querySelector("#login-error").textContent !== ""`),
	)
	if msg := text(t, ctx, "#login-error"); msg != "wrong user name or password" {
		t.Fatalf("wrong password message %q", msg)
	}
	shot(t, ctx, "web-login")
	run(t, ctx, "log in",
		setValue("#login-password", ""),
		keys("#login-password", "alice-secret"),
		click("#login-submit"),
		visible("#browse-view"),
	)
	run(t, ctx, "open the panes",
		openPane("left", f.url+"/"),
		visible(entrySel("left", "a.bin")),
		openPane("right", "file://"+ta.root),
		until(`document.querySelector('[data-pane="right"]').dataset.path === `+jsString(ta.root)),
	)

	// The keyboard path: select, then Copy.
	run(t, ctx, "copy a.bin with the button",
		click(entrySel("left", "a.bin")+" .name"),
		click(`[data-pane="left"] .copy`),
		visible("#advice-dialog[open]"),
	)
	if eta := text(t, ctx, "#advice-eta"); eta == "" {
		t.Errorf("the dialog shows no ETA")
	}
	shot(t, ctx, "web-advice")
	run(t, ctx, "confirm and finish",
		click("#advice-confirm"),
		visible(`#jobs tr.job[data-state="done"]`),
		visible(entrySel("right", "a.bin")),
	)
	if msg := text(t, ctx, `#jobs tr.job[data-state="done"] .pct`); msg != "100 %" {
		t.Errorf("finished job shows %q", msg)
	}
	if got, err := os.ReadFile(filepath.Join(ta.root, "a.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("a.bin: %d bytes, %v; want the %d bytes sent", len(got), err, len(data))
	}
	// The record feeds the advisor of the next copy: its ETA is known.
	waitRecords(t, ta.hist, 1)

	// A native HTML5 drag (chromedp intercepts it and replays it with
	// Input.dispatchDragEvent).
	run(t, ctx, "drag the tree across",
		chromedp.DragAndDrop(chromedp.CSS(entrySel("left", "tree")+" .size"), chromedp.CSS(`[data-pane="right"] .listing`)),
		visible("#advice-dialog[open]"),
	)
	eta, what := text(t, ctx, "#advice-eta"), text(t, ctx, "#advice-what")
	if eta == "" || eta == "unknown" || !strings.HasPrefix(what, "2 file(s)") {
		t.Errorf("drag dialog: ETA %q, %q", eta, what)
	}
	run(t, ctx, "confirm the drag",
		setValue("#advice-parallel", "2"),
		click("#advice-confirm"),
		until(`document.querySelectorAll('#jobs tr.job[data-state="done"]').length === 2`),
		visible(entrySel("right", "tree")),
	)
	for _, n := range []string{"tree/x.txt", "tree/sub/y.txt"} {
		want, _ := os.ReadFile(filepath.Join(f.dir, n))
		if got, err := os.ReadFile(filepath.Join(ta.root, n)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, or not the same bytes", n, err)
		}
	}
	// In sync, the tree has nothing left to copy; Escape copies nothing.
	run(t, ctx, "sync the tree",
		chromedp.DragAndDrop(chromedp.CSS(entrySel("left", "tree")+" .size"), chromedp.CSS(`[data-pane="right"] .listing`)),
		visible("#advice-dialog[open]"),
		click("#advice-sync"),
		until(`document.querySelector("#advice-eta").textContent === "nothing to copy"`),
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotVisible(chromedp.CSS("#advice-dialog")),
	)
	time.Sleep(300 * time.Millisecond)
	if n := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#jobs tr.job").length`)); n != 2 {
		t.Errorf("%d jobs after Escape, want 2", n)
	}
	// The same with events the page makes itself, a drag of a file back.
	if res := get(t, ctx, chromedp.Evaluate[string](dragJS+`("right", "a.bin", "left")`)); res != "ok" {
		t.Fatalf("synthesized drag: %s", res)
	}
	run(t, ctx, "cancel the dialog", visible("#advice-dialog[open]"), click("#advice-cancel"), chromedp.WaitNotVisible(chromedp.CSS("#advice-dialog")))
	shot(t, ctx, "web-panes")

	// A large transfer, cancelled midway.
	run(t, ctx, "start the large copy",
		click(entrySel("left", "slow.bin")+" .name"),
		click(`[data-pane="left"] .copy`),
		visible("#advice-dialog[open]"),
		click("#advice-confirm"),
		until(`(() => { const p = document.querySelector('#jobs tr.job[data-state="running"] progress'); return p !== null && p.value > 0; })()`),
	)
	shot(t, ctx, "web-progress")
	run(t, ctx, "cancel it",
		click(`#jobs tr.job[data-state="running"] .cancel-job`),
		visible(`#jobs tr.job[data-state="cancelled"]`),
	)
	if msg := text(t, ctx, `#jobs tr.job[data-state="cancelled"] .pct`); msg == "100 %" {
		t.Errorf("the cancelled copy shows 100 %%")
	}
	if jobs := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#jobs tr.job").length`)); jobs != 3 {
		t.Errorf("%d jobs in the table, want 3 (a.bin, tree, slow.bin)", jobs)
	}
	// Retry resumes it; the finished copy is verified.
	f.slow.Store(false)
	run(t, ctx, "retry",
		click(`#jobs tr.job[data-state="cancelled"] .retry-job`),
		until(`document.querySelectorAll('#jobs tr.job[data-state="done"]').length === 3`),
	)
	if st := text(t, ctx, `#jobs tr.job:first-child .state`); st != "done (resumed), verified MD5" {
		t.Errorf("retried job's state %q", st)
	}
	slow, _ := os.ReadFile(filepath.Join(f.dir, "slow.bin"))
	if got, _ := os.ReadFile(filepath.Join(ta.root, "slow.bin")); !bytes.Equal(got, slow) {
		t.Errorf("slow.bin after the retry: %d bytes, not the original", len(got))
	}
	run(t, ctx, "checksum",
		click(entrySel("right", "a.bin")+" .name"),
		click(`[data-pane="right"] .checksum`),
		until(`document.querySelector('[data-pane="right"] .checksums').textContent.startsWith("MD5 ")`),
	)
	if st, want := text(t, ctx, `[data-pane="right"] .checksums`), fmt.Sprintf("MD5 %x  a.bin", md5.Sum(data)); st != want {
		t.Errorf("checksum shows %q, want %q", st, want)
	}

	// The history table.
	waitRecords(t, ta.hist, 5)
	run(t, ctx, "history",
		click("#tab-history"),
		until(`document.querySelectorAll("#history tr.history-row").length >= 5`),
	)
	if n := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#history tr.history-row[data-outcome="cancelled"]').length`)); n != 1 {
		t.Errorf("%d cancelled rows in the history table, want 1", n)
	}
	// The charts, drawn by the vendored Chart.js: one point per
	// successful transfer.
	for _, id := range []string{"chart-rate-time", "chart-rate-streams", "chart-rate-buffer"} {
		n := get(t, ctx, chromedp.Evaluate[int](`Chart.getChart(document.getElementById("`+id+`")).data.datasets.reduce((n, d) => n + d.data.length, 0)`))
		if n != 4 {
			t.Errorf("%s has %d points, want 4 (the successful transfers)", id, n)
		}
	}
	shot(t, ctx, "web-history")
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitRecords waits until the history holds at least n records.
func waitRecords(t *testing.T, st history.Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		recs, err := st.Records(context.Background(), history.Filter{})
		if err == nil && len(recs) >= n {
			return
		}
	}
	t.Fatalf("the history never held %d records", n)
}

// TestBrowserLoad: a directory of 10,000 entries lists, sorts and
// filters quickly, and 20 transfers at once leave the page responsive.
func TestBrowserLoad(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	big := filepath.Join(ta.root, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 10000 {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("file-%05d.dat", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		writeFile(t, filepath.Join(f.dir, fmt.Sprintf("slow-%02d.bin", i)), randomData(3<<20))
	}
	ctx := browser(t)
	run(t, ctx, "log in",
		logIn(ta, "bob"),
	)
	start := time.Now()
	run(t, ctx, "open 10,000 entries",
		openPane("right", "file://"+big),
		until(`document.querySelector('[data-pane="right"] .status').textContent.startsWith("10000 of 10000 entries")`),
		visible(entrySel("right", "file-00000.dat")),
	)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("listing 10,000 entries took %v", d)
	}
	// Rows come in chunks as the listing scrolls.
	rows := func() int {
		return get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-pane="right"] tr.entry').length`))
	}
	n0 := rows()
	run(t, ctx, "scroll", js(`(() => { const l = document.querySelector('[data-pane="right"] .listing'); l.scrollTop = l.scrollHeight; return true; })()`),
		until(`document.querySelectorAll('[data-pane="right"] tr.entry').length > `+fmt.Sprint(n0)))
	if n0 < 50 || n0 >= 10000 {
		t.Errorf("%d rows rendered at first", n0)
	}
	// Sorting and filtering happen in the page: time them there.
	ms := get(t, ctx, chromedp.Evaluate[float64](`(() => {
		const t0 = performance.now();
		document.querySelector('[data-pane="right"] th[data-sort="name"]').click(); // descending
		const f = document.querySelector('[data-pane="right"] .filter');
		f.value = "file-0999"; f.dispatchEvent(new Event("input"));
		return performance.now() - t0;
	})()`))
	if ms > 500 {
		t.Errorf("sorting and filtering 10,000 entries took %.0f ms", ms)
	}
	if n := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-pane="right"] tr.entry').length`)); n != 10 {
		t.Errorf("filter shows %d entries, want 10", n)
	}
	if first := get(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-pane="right"] tr.entry').dataset.name`)); first != "file-09999.dat" {
		t.Errorf("descending sort starts with %q", first)
	}

	// 20 copies at once, started the way the dialog starts them.
	run(t, ctx, "open the server",
		openPane("left", f.url+"/"),
		visible(entrySel("left", "slow-19.bin")),
	)
	started := get(t, ctx, chromedp.Evaluate[int](`(async () => {
		const l = app.panes.left, r = app.panes.right;
		await api("POST", "/api/mkdir", {ep: r.ep.id, dir: r.path, name: "in"});
		const names = l.entries.map((e) => e.name);
		await Promise.all(names.map((n) => api("POST", "/api/jobs", {src: l.ep.id, srcDir: l.path, names: [n], dst: r.ep.id, dstDir: r.path + "/in", params: {parallel: 2, tcpBuffer: 0, blockSize: 0, predictedEta: 0}})));
		return names.length;
	})()`, chromedp.EvalAwaitPromise))
	if started != 20 {
		t.Fatalf("started %d jobs", started)
	}
	run(t, ctx, "transfers shown", until(`document.querySelectorAll("#jobs tr.job").length === 20`))
	// While they run, the page answers: a filter keystroke re-renders
	// the 10,000-entry pane, and the event loop stays free.
	worst := 0.0
	for i := 0; i < 10; i++ {
		ms := get(t, ctx, chromedp.Evaluate[float64](`(async () => {
			const t0 = performance.now();
			const f = document.querySelector('[data-pane="right"] .filter');
			f.value = f.value === "" ? "file-00" : ""; f.dispatchEvent(new Event("input"));
			await new Promise((res) => setTimeout(res, 0));
			return performance.now() - t0;
		})()`, chromedp.EvalAwaitPromise))
		worst = max(worst, ms)
		time.Sleep(100 * time.Millisecond)
	}
	if worst > 1500 {
		t.Errorf("the page took up to %.0f ms to answer during 20 transfers", worst)
	}
	run(t, ctx, "all done", until(`document.querySelectorAll('#jobs tr.job[data-state="done"]').length === 20`))
	for i := range 20 {
		n := fmt.Sprintf("slow-%02d.bin", i)
		want, _ := os.ReadFile(filepath.Join(f.dir, n))
		if got, err := os.ReadFile(filepath.Join(big, "in", n)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, or not the same bytes", n, err)
		}
	}
	t.Logf("worst answer during 20 transfers: %.0f ms", worst)
}

// TestBrowserGCT opens a Ferry server in the left pane and GCT's
// globus-gridftp-server (anonymous) in the right, and drags a file and
// a directory across: third-party copies, the bytes going from server
// to server, verified by checksum.
func TestBrowserGCT(t *testing.T) {
	ta := startApp(t)
	f := startFerrySrv(t)
	f.slow.Store(false)
	data := randomData(5<<20 + 1)
	writeFile(t, filepath.Join(f.dir, "a.bin"), data)
	writeFile(t, filepath.Join(f.dir, "tree", "x.txt"), []byte("x file"))
	writeFile(t, filepath.Join(f.dir, "tree", "sub", "y.txt"), randomData(70<<10))
	gdir := gct.Dir(t)
	gaddr := gct.Start(t, gdir)
	ctx := browser(t)
	run(t, ctx, "log in and open the panes",
		logIn(ta, "alice"),
		openPane("left", f.url+"/"),
		visible(entrySel("left", "a.bin")),
		openPane("right", "ftp://"+gaddr+gdir+"/"),
		until(`document.querySelector('[data-pane="right"]').dataset.path === `+jsString(gdir)),
	)
	run(t, ctx, "drag a.bin to GCT",
		chromedp.DragAndDrop(chromedp.CSS(entrySel("left", "a.bin")+" .size"), chromedp.CSS(`[data-pane="right"] .listing`)),
		visible("#advice-dialog[open]"),
	)
	if eta := text(t, ctx, "#advice-eta"); eta == "" {
		t.Errorf("no ETA")
	}
	run(t, ctx, "confirm",
		click("#advice-confirm"),
		visible(`#jobs tr.job[data-state="done"]`),
		visible(entrySel("right", "a.bin")),
	)
	run(t, ctx, "drag the tree to GCT",
		chromedp.DragAndDrop(chromedp.CSS(entrySel("left", "tree")+" .size"), chromedp.CSS(`[data-pane="right"] .listing`)),
		visible("#advice-dialog[open]"),
		click("#advice-confirm"),
		until(`document.querySelectorAll('#jobs tr.job[data-state="done"]').length === 2`),
		visible(entrySel("right", "tree")),
	)
	if st := text(t, ctx, `#jobs tr.job:first-child .state`); st != "done, verified MD5" {
		t.Errorf("state %q", st)
	}
	for n, want := range map[string][]byte{"a.bin": data, "tree/x.txt": []byte("x file")} {
		if got, err := os.ReadFile(filepath.Join(gdir, n)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s on GCT: %v, or not the same bytes", n, err)
		}
	}
	want, _ := os.ReadFile(filepath.Join(f.dir, "tree", "sub", "y.txt"))
	if got, err := os.ReadFile(filepath.Join(gdir, "tree", "sub", "y.txt")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("tree/sub/y.txt on GCT: %v, or not the same bytes", err)
	}
	waitRecords(t, ta.hist, 3)
	recs, _ := ta.hist.Records(context.Background(), history.Filter{})
	for _, r := range recs {
		if r.Kind != "third-party" || r.Outcome != history.OK {
			t.Errorf("record %s %s → %s: %s %s", r.Kind, r.SrcPath, r.DstPath, r.Outcome, r.Error)
		}
	}
}

// TestBrowserGSI: the user's proxy, made in the page from an encrypted
// key (after an expired proxy and a wrong passphrase, each with its
// message), opens a GSI Ferry server in the left pane and GCT's GSI
// server in the right; a file dragged from one to the other (a
// third-party copy between GSI servers) arrives byte for byte.
func TestBrowserGSI(t *testing.T) {
	pki := gsipki.New(t, "")
	ta := startAppWith(t, func(c *Config) { c.TrustDir = pki.TrustDir })
	f := startFerrySrvGSI(t, pki)
	f.slow.Store(false)
	data := randomData(3<<20 + 7)
	writeFile(t, filepath.Join(f.dir, "g.bin"), data)
	gdir := gctgsi.Dir(t, pki)
	g := gctgsi.Start(t, pki, nil)
	ctx := browser(t)
	run(t, ctx, "log in; gsiftp:// without a proxy",
		logIn(ta, "alice"),
		openPane("left", f.url+"/"),
		until(`document.querySelector('[data-pane="left"] .pane-error').textContent !== ""`),
	)
	if msg := text(t, ctx, `[data-pane="left"] .pane-error`); !strings.HasPrefix(msg, "no proxy") {
		t.Errorf("gsiftp:// without a proxy: %q", msg)
	}
	run(t, ctx, "an expired proxy",
		click("#cred summary"),
		setValue("#cred-proxy", readText(t, pki.ExpiredProxy(t))),
		click("#cred-upload"),
		until(`document.querySelector("#cred-error").textContent !== ""`),
	)
	if msg := text(t, ctx, "#cred-error"); !strings.HasPrefix(msg, "this proxy expired at ") || !strings.Contains(msg, "create or upload a new one") {
		t.Errorf("expired proxy message %q", msg)
	}
	cert, key := readText(t, pki.UserCert), encryptedKey(t, pki.UserKey, "open sesame")
	run(t, ctx, "a wrong passphrase",
		setValue("#cred-cert", cert),
		setValue("#cred-key", key),
		keys("#cred-pass", "not it"),
		click("#cred-create"),
		until(`document.querySelector("#cred-error").textContent === "wrong passphrase for the key"`),
	)
	run(t, ctx, "create the proxy",
		setValue("#cred-key", key),
		keys("#cred-pass", "open sesame"),
		click("#cred-create"),
		until(`document.querySelector("#cred-status").classList.contains("ok")`),
	)
	if st := text(t, ctx, "#cred-status"); !strings.HasPrefix(st, pki.User.Identity()+", 11 h 59 min left") && !strings.HasPrefix(st, pki.User.Identity()+", 12 h") {
		t.Errorf("credential status %q", st)
	}
	if v := get(t, ctx, chromedp.Evaluate[string](`document.querySelector("#cred-pass").value + document.querySelector("#cred-key").value`)); v != "" {
		t.Errorf("the passphrase or key stays in the page")
	}
	shot(t, ctx, "web-gsi")
	run(t, ctx, "open both GSI servers",
		click(`[data-pane="left"] .open-button`),
		visible(entrySel("left", "g.bin")),
		openPane("right", "gsiftp://"+g.Addr+gdir+"/"),
		until(`document.querySelector('[data-pane="right"]').dataset.path === `+jsString(gdir)),
	)
	run(t, ctx, "drag g.bin to GCT",
		chromedp.DragAndDrop(chromedp.CSS(entrySel("left", "g.bin")+" .size"), chromedp.CSS(`[data-pane="right"] .listing`)),
		visible("#advice-dialog[open]"),
		click("#advice-confirm"),
		until(`document.querySelector('#jobs tr.job[data-state="done"], #jobs tr.job[data-state="failed"]') !== null`),
	)
	if st := text(t, ctx, `#jobs tr.job:first-child .state`); st != "done, verified MD5" {
		t.Fatalf("gsiftp:// third-party copy: %q", st)
	}
	if got, err := os.ReadFile(filepath.Join(gdir, "g.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("g.bin on GCT: %v, or not the same bytes", err)
	}
}

// TestBrowserFileOps makes, renames and deletes (after confirming) a
// directory in a file:// pane, sorts by size, filters, and follows the
// breadcrumbs; a file:// URL outside the roots is refused with a message.
func TestBrowserFileOps(t *testing.T) {
	ta := startApp(t)
	writeFile(t, filepath.Join(ta.root, "small"), []byte("1"))
	writeFile(t, filepath.Join(ta.root, "large"), randomData(5000))
	writeFile(t, filepath.Join(ta.root, "sub", "deep.txt"), []byte("deep"))
	ctx := browser(t)
	run(t, ctx, "log in; a file:// outside the roots",
		logIn(ta, "bob"),
		openPane("left", "file:///etc"),
		until(`document.querySelector('[data-pane="left"] .pane-error').textContent !== ""`),
	)
	if msg := text(t, ctx, `[data-pane="left"] .pane-error`); !strings.Contains(msg, "outside the allowed directories") {
		t.Errorf("file:///etc: %q", msg)
	}
	L := `[data-pane="left"] `
	names := func() string {
		return get(t, ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('[data-pane="left"] tr.entry')).map((r) => r.dataset.name).join(",")`))
	}
	run(t, ctx, "open the root",
		setValue(L+".url", "file://"+ta.root),
		click(L+".open-button"),
		visible(entrySel("left", "small")),
	)
	run(t, ctx, "make a directory",
		click(L+".mkdir"),
		visible("#ask-dialog[open]"),
		keys("#ask-input", "made"),
		click("#ask-ok"),
		visible(entrySel("left", "made")),
	)
	if fi, err := os.Stat(filepath.Join(ta.root, "made")); err != nil || !fi.IsDir() {
		t.Fatalf("made: %v", err)
	}
	run(t, ctx, "rename it",
		click(entrySel("left", "made")+" .size"),
		click(L+".rename"),
		visible("#ask-dialog[open]"),
		setValue("#ask-input", "renamed"),
		click("#ask-ok"),
		visible(entrySel("left", "renamed")),
	)
	run(t, ctx, "delete it, cancelling first",
		click(entrySel("left", "renamed")+" .size"),
		click(L+".delete"),
		visible("#ask-dialog[open]"),
		click("#ask-cancel"),
		chromedp.WaitNotVisible(chromedp.CSS("#ask-dialog")),
	)
	if _, err := os.Stat(filepath.Join(ta.root, "renamed")); err != nil {
		t.Fatalf("cancelled delete deleted: %v", err)
	}
	run(t, ctx, "delete it",
		click(L+".delete"),
		visible("#ask-dialog[open]"),
		click("#ask-ok"),
		chromedp.WaitNotPresent(chromedp.CSS(entrySel("left", "renamed"))),
	)
	if _, err := os.Stat(filepath.Join(ta.root, "renamed")); !os.IsNotExist(err) {
		t.Errorf("renamed still there: %v", err)
	}
	if got := names(); got != "sub,large,small" && got != "sub,small,large" {
		t.Errorf("entries %q", got)
	}
	run(t, ctx, "sort by size, descending", click(L+`th[data-sort="size"]`), click(L+`th[data-sort="size"]`))
	if got := names(); got != "sub,large,small" {
		t.Errorf("by size descending: %q", got)
	}
	run(t, ctx, "filter", keys(L+".filter", "sma"))
	if got := names(); got != "small" {
		t.Errorf("filtered: %q", got)
	}
	run(t, ctx, "into sub and back by the breadcrumbs",
		setValue(L+".filter", ""),
		js(`(() => { document.querySelector('[data-pane="left"] .filter').dispatchEvent(new Event("input")); return true; })()`),
		click(entrySel("left", "sub")+" .name"),
		visible(entrySel("left", "deep.txt")),
		click(L+`.breadcrumbs a[data-path="`+ta.root+`"]`),
		visible(entrySel("left", "sub")),
		// Above the root is refused.
		click(L+`.breadcrumbs a[data-path="`+filepath.Dir(ta.root)+`"]`),
		until(`document.querySelector('[data-pane="left"] .pane-error').textContent.includes("outside the allowed directories")`),
	)
}
