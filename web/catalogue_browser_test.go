package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
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
