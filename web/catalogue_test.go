package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/replica"
)

// hostileLFN is an LFN a user may register that a page must show as
// text: markup, both quotes and an ampersand (no slash: one name).
const hostileLFN = `/x/<img src=x onerror="window.pwned=1">'&amp;<script>window.pwned=2`

// startCatalogueApp starts an app whose history database also holds a
// replica catalogue with two LFNs (one hostile), and returns it with
// the catalogue.
func startCatalogueApp(t *testing.T) (*testApp, *replica.Catalogue) {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "history.db")
	cat, err := replica.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	ctx := context.Background()
	verified := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	for _, r := range []struct {
		lfn   string
		rep   replica.Replica
		state replica.State
	}{
		{"/cms/run1/f.root", replica.Replica{URL: "gsiftp://a.example/data/f.root", Size: 5, Sum: "00aa11bb", Verified: verified}, replica.OK},
		{"/cms/run1/f.root", replica.Replica{URL: "ftp://b.example/f.root", Size: 5, Sum: "00aa11bb"}, replica.Bad},
		{"/cms/run1/f.root", replica.Replica{URL: "ftp://c.example/f.root", Size: 5, Sum: "00aa11bb"}, replica.Missing},
		{hostileLFN, replica.Replica{URL: `ftp://d.example/"><script>window.pwned=3</script>`, Size: 7, Sum: "cafe0001"}, ""},
	} {
		if err := cat.Add(ctx, r.lfn, "ADLER32", r.rep); err != nil {
			t.Fatal(err)
		}
		if r.state == replica.Bad || r.state == replica.Missing {
			if err := cat.Mark(ctx, r.lfn, r.rep.URL, r.state, -1, "", verified, "checked"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 5 {
		if err := cat.Add(ctx, "/many/f"+string(rune('0'+i)), "MD5", replica.Replica{URL: "ftp://e.example/f", Size: 1, Sum: "ab"}); err != nil {
			t.Fatal(err)
		}
	}
	ta := startAppOn(t, dsn, t.TempDir(), func(c *Config) { c.Catalogue = cat })
	return ta, cat
}

func TestCatalogueAPI(t *testing.T) {
	ta, _ := startCatalogueApp(t)
	anon := ta.client(t)
	c := ta.client(t)
	c.login("alice")
	var me meReply
	c.must("GET", "/api/me", nil, &me)
	if !me.Catalogue {
		t.Error("/api/me: catalogue false")
	}
	names := func(l catalogueList) string {
		var s []string
		for _, e := range l.Entries {
			n := e.Name
			if e.Dir {
				n += "/"
			}
			s = append(s, n)
		}
		return strings.Join(s, " ")
	}
	q := url.QueryEscape
	for _, tc := range []struct {
		name, path string
		anon       bool
		code       int
		check      func(t *testing.T, body []byte)
	}{
		{name: "list needs a login", path: "/api/catalogue/list", anon: true, code: 401},
		{name: "lfn needs a login", path: "/api/catalogue/lfn?lfn=/cms/run1/f.root", anon: true, code: 401},
		{name: "top", path: "/api/catalogue/list", code: 200, check: func(t *testing.T, b []byte) {
			l := decode[catalogueList](t, b)
			if got := names(l); got != "cms/ many/ x/" || l.Dir != "/" || l.Next != "" {
				t.Errorf("top: %q dir %q next %q", got, l.Dir, l.Next)
			}
		}},
		{name: "a directory as lfn: URL", path: "/api/catalogue/list?dir=" + q("lfn:/cms/run1"), code: 200, check: func(t *testing.T, b []byte) {
			l := decode[catalogueList](t, b)
			if len(l.Entries) != 1 || l.Entries[0] != (catalogueChild{Name: "f.root", LFN: "/cms/run1/f.root", Size: 5, Alg: "ADLER32", Replicas: 3, OK: 1}) {
				t.Errorf("run1: %+v", l.Entries)
			}
		}},
		{name: "hostile name escaped", path: "/api/catalogue/list?dir=/x", code: 200, check: func(t *testing.T, b []byte) {
			if strings.ContainsAny(string(b), "<>") {
				t.Errorf("raw markup in JSON: %s", b)
			}
			l := decode[catalogueList](t, b)
			if len(l.Entries) != 1 || l.Entries[0].LFN != hostileLFN {
				t.Errorf("x: %+v", l.Entries)
			}
		}},
		{name: "one page", path: "/api/catalogue/list?dir=/many&limit=2", code: 200, check: func(t *testing.T, b []byte) {
			l := decode[catalogueList](t, b)
			if got := names(l); got != "f0 f1" || l.Next == "" {
				t.Fatalf("page 1: %q next %q", got, l.Next)
			}
			var l2 catalogueList
			c.must("GET", "/api/catalogue/list?dir=/many&limit=3&from="+q(l.Next), nil, &l2)
			if got := names(l2); got != "f2 f3 f4" || l2.Next != "" {
				t.Errorf("page 2: %q next %q", got, l2.Next)
			}
		}},
		{name: "an empty directory", path: "/api/catalogue/list?dir=/nothing", code: 200, check: func(t *testing.T, b []byte) {
			if l := decode[catalogueList](t, b); l.Entries == nil || len(l.Entries) != 0 {
				t.Errorf("entries %#v, want []", l.Entries)
			}
		}},
		{name: "limit 0", path: "/api/catalogue/list?limit=0", code: 400},
		{name: "limit too large", path: "/api/catalogue/list?limit=1001", code: 400},
		{name: "limit not a number", path: "/api/catalogue/list?limit=x", code: 400},
		{name: "a cursor of another directory", path: "/api/catalogue/list?dir=/many&from=" + q("=/cms/"), code: 400},
		{name: "a relative directory", path: "/api/catalogue/list?dir=cms", code: 400},
		{name: "a dotdot directory", path: "/api/catalogue/list?dir=/cms/../x", code: 400},
		{name: "a host in the lfn: URL", path: "/api/catalogue/list?dir=" + q("lfn://h/cms"), code: 400},
		{name: "replicas", path: "/api/catalogue/lfn?lfn=/cms/run1/f.root", code: 200, check: func(t *testing.T, b []byte) {
			e := decode[catalogueEntry](t, b)
			if e.LFN != "/cms/run1/f.root" || e.Size != 5 || e.Alg != "ADLER32" || e.Sum != "00aa11bb" || len(e.Replicas) != 3 {
				t.Fatalf("entry %+v", e)
			}
			want := map[string]string{"gsiftp://a.example/data/f.root": "ok", "ftp://b.example/f.root": "bad", "ftp://c.example/f.root": "missing"}
			for _, r := range e.Replicas {
				if want[r.URL] != r.State || r.Sum != "00aa11bb" || r.Size != 5 || r.Verified.IsZero() {
					t.Errorf("replica %+v", r)
				}
			}
		}},
		{name: "hostile replicas escaped", path: "/api/catalogue/lfn?lfn=" + q(hostileLFN), code: 200, check: func(t *testing.T, b []byte) {
			if strings.ContainsAny(string(b), "<>") {
				t.Errorf("raw markup in JSON: %s", b)
			}
			e := decode[catalogueEntry](t, b)
			if e.LFN != hostileLFN || len(e.Replicas) != 1 || !strings.Contains(e.Replicas[0].URL, `"><script>`) || e.Replicas[0].State != "unverified" || !e.Replicas[0].Verified.IsZero() {
				t.Errorf("entry %+v", e)
			}
		}},
		{name: "an unknown LFN", path: "/api/catalogue/lfn?lfn=/cms/nope", code: 404},
		{name: "a directory is not an LFN", path: "/api/catalogue/lfn?lfn=/cms", code: 404},
		{name: "no LFN", path: "/api/catalogue/lfn", code: 400},
		{name: "a malformed LFN", path: "/api/catalogue/lfn?lfn=" + q("/a//b"), code: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := c.hc
			if tc.anon {
				hc = anon.hc
			}
			res, err := hc.Get(ta.srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.code {
				t.Fatalf("%s: %d %s, want %d", tc.path, res.StatusCode, body, tc.code)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.check != nil {
				tc.check(t, body)
			}
		})
	}
	// Read-only: nothing but GET.
	if code, _ := c.do("POST", "/api/catalogue/list", struct{}{}, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST list: %d", code)
	}
}

func TestCatalogueNone(t *testing.T) {
	ta := startApp(t)
	c := ta.client(t)
	c.login("bob")
	var me meReply
	c.must("GET", "/api/me", nil, &me)
	if me.Catalogue {
		t.Error("/api/me: catalogue true without one")
	}
	for _, p := range []string{"/api/catalogue/list", "/api/catalogue/lfn?lfn=/a"} {
		if code, msg := c.do("GET", p, nil, nil); code != 404 || !strings.Contains(msg, "no replica catalogue") {
			t.Errorf("%s: %d %q", p, code, msg)
		}
	}
}

// decode decodes a JSON reply body, failing the test if it cannot.
func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return v
}
