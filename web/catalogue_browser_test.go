package web

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ferrygrid/ferry/internal/replica"
)

// openLFN clicks the catalogue row of the LFN (or directory) lfn.
func openLFN(lfn string) step {
	return chromedp.Steps(
		until(`Array.from(document.querySelectorAll("#catalogue tr.lfn")).some((r) => r.dataset.lfn === `+jsString(lfn)+`)`),
		js(`(() => { Array.from(document.querySelectorAll("#catalogue tr.lfn")).find((r) => r.dataset.lfn === `+jsString(lfn)+`).querySelector("a").click(); return true; })()`),
	)
}

func TestBrowserCatalogue(t *testing.T) {
	ta, _ := startCatalogueApp(t)
	ctx := browser(t)
	run(t, ctx, "log in, open the catalogue, walk to an LFN",
		logIn(ta, "alice"),
		visible("#tab-catalogue"),
		click("#tab-catalogue"),
		visible("#catalogue-view"),
		openLFN("/cms"),
		openLFN("/cms/run1"),
		openLFN("/cms/run1/f.root"),
		visible("#lfn-detail"),
		until(`document.querySelectorAll("#replicas tr.replica").length === 3`),
	)
	if got := text(t, ctx, "#lfn-name"); got != "lfn:/cms/run1/f.root" {
		t.Errorf("name %q", got)
	}
	if got := text(t, ctx, "#lfn-meta"); !strings.Contains(got, "ADLER32 00aa11bb") {
		t.Errorf("meta %q", got)
	}
	rows := get(t, ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#replicas tr.replica")).map((r) => Array.from(r.cells).map((c) => c.textContent).join("|")).join("\n")`))
	for _, want := range []string{
		"gsiftp://a.example/data/f.root|5|ADLER32 00aa11bb|2026-05-04 03:02:01|ok",
		"ftp://b.example/f.root|5|ADLER32 00aa11bb|2026-05-04 03:02:01|bad: checked",
		"ftp://c.example/f.root|5|ADLER32 00aa11bb|2026-05-04 03:02:01|missing: checked",
	} {
		if !strings.Contains(rows, want) {
			t.Errorf("replicas:\n%s\nwant a row %s", rows, want)
		}
	}
	shot(t, ctx, "web-catalogue")
	run(t, ctx, "back to the top by the breadcrumbs, into the hostile name",
		click(`#catalogue-crumbs a[data-path="/"]`),
		openLFN("/x"),
		openLFN(hostileLFN),
		until(`document.querySelector("#lfn-name").textContent === `+jsString("lfn:"+hostileLFN)),
		until(`document.querySelectorAll("#replicas tr.replica").length === 1`),
	)
	if got := text(t, ctx, "#replicas td.url"); got != `ftp://d.example/"><script>window.pwned=3</script>` {
		t.Errorf("hostile URL shown as %q", got)
	}
	// Nothing the names hold ran or became an element.
	if got := get(t, ctx, chromedp.Evaluate[string](`String(window.pwned) + " " + document.querySelectorAll("#catalogue-view img, #catalogue-view script").length`)); got != "undefined 0" {
		t.Errorf("pwned, elements: %s", got)
	}
	row := get(t, ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#catalogue tr.lfn")).map((r) => r.cells[0].textContent).join("|")`))
	if row != `<img src=x onerror="window.pwned=1">'&amp;<script>window.pwned=2` {
		t.Errorf("hostile name shown as %q", row)
	}
}

// dragLFNJS drags the catalogue row of lfn onto the Browse tab (which
// opens the panes) and drops it on pane to, with synthesized HTML5 drag
// events (as dragJS).
const dragLFNJS = `((lfn, to) => {
  const src = Array.from(document.querySelectorAll("#catalogue tr.lfn")).find((r) => r.dataset.lfn === lfn);
  const tab = document.querySelector("#tab-browse");
  const dst = document.querySelector('[data-pane="' + to + '"] .listing');
  if (!src || !dst) return "no such LFN or pane";
  const dt = new DataTransfer();
  const ev = (type, target) => { const e = new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: dt}); target.dispatchEvent(e); return e; };
  ev("dragstart", src);
  ev("dragenter", tab);
  if (!ev("dragover", tab).defaultPrevented) return "the tab refused it";
  if (document.querySelector("#browse-view").hidden) return "the tab did not show the panes";
  ev("dragenter", dst);
  if (!ev("dragover", dst).defaultPrevented) return "drop refused";
  ev("drop", dst);
  ev("dragend", src);
  return "ok";
})`

// TestBrowserCatalogueCopy copies an LFN into the left pane with its
// row's button and into the right pane by dragging the row: the wrong
// replica tried first is caught and marked bad, the transfer list says
// which replica the file came from, and the file shows in the pane.
func TestBrowserCatalogueCopy(t *testing.T) {
	ta, cat, data, wrong, good := lfnCopyApp(t)
	dstSrv := startFerrySrv(t)
	ctx := browser(t)
	run(t, ctx, "log in, open the panes",
		logIn(ta, "alice"),
		openPane("left", "file://"+ta.root),
		until(`document.querySelector('[data-pane="left"]').dataset.path === `+jsString(ta.root)),
		openPane("right", dstSrv.url+"/"),
		until(`document.querySelector('[data-pane="right"]').dataset.path === "/"`),
	)
	run(t, ctx, "copy the LFN to the left pane with its button",
		click("#tab-catalogue"),
		visible("#catalogue-view"),
		openLFN("/run"),
		until(`Array.from(document.querySelectorAll("#catalogue tr.lfn")).some((r) => r.dataset.lfn === "/run/f.bin")`),
		js(`(() => { document.querySelector('#catalogue tr.lfn[data-lfn="/run/f.bin"] button.copy-lfn[data-side="left"]').click(); return true; })()`),
		visible("#browse-view"),
		visible(`#jobs tr.job[data-state="done"]`),
		visible(entrySel("left", "f.bin")),
	)
	if got := text(t, ctx, `#jobs tr.job[data-state="done"] .replica`); got != "from "+good.url+"/f.bin" {
		t.Errorf("the job's replica: %q", got)
	}
	if got := text(t, ctx, `#jobs tr.job[data-state="done"] .note`); !strings.Contains(got, "checksum mismatch") || !strings.Contains(got, wrong.url) {
		t.Errorf("the job's note: %q", got)
	}
	if got := text(t, ctx, `#jobs tr.job[data-state="done"] .state`); got != "done, verified MD5" {
		t.Errorf("the job's state: %q", got)
	}
	shot(t, ctx, "web-catalogue-copy")
	if got, err := os.ReadFile(filepath.Join(ta.root, "f.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copy differs (%v)", err)
	}
	if s := replicaState(t, cat, "/run/f.bin", wrong.url+"/f.bin"); s != replica.Bad {
		t.Errorf("the wrong replica is %s, want bad", s)
	}

	run(t, ctx, "back to the catalogue, where it was",
		click("#tab-catalogue"),
		visible("#catalogue-view"),
		until(`Array.from(document.querySelectorAll("#catalogue tr.lfn")).some((r) => r.dataset.lfn === "/run/f.bin")`),
	)
	if res := get(t, ctx, chromedp.Evaluate[string](dragLFNJS+`("/run/f.bin", "right")`)); res != "ok" {
		t.Fatalf("drag: %s", res)
	}
	run(t, ctx, "the dragged LFN lands in the right pane",
		until(`document.querySelectorAll('#jobs tr.job[data-state="done"]').length === 2`),
		visible(entrySel("right", "f.bin")),
	)
	if got, err := os.ReadFile(filepath.Join(dstSrv.dir, "f.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the server's copy differs (%v)", err)
	}

	// A pane with nothing open: the catalogue says so.
	run(t, ctx, "no endpoint",
		js(`(() => { app.panes.left.ep = null; return true; })()`),
		click("#tab-catalogue"),
		js(`(() => { document.querySelector('#catalogue tr.lfn[data-lfn="/run/f.bin"] button.copy-lfn[data-side="left"]').click(); return true; })()`),
		until(`document.querySelector("#catalogue-error").textContent !== ""`),
	)
	if got := text(t, ctx, "#catalogue-error"); got != "Open an endpoint in the left pane first." {
		t.Errorf("error %q", got)
	}
}
