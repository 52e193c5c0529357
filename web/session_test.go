package web

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
)

// TestSessionCaps: a user's sessions are bounded (the oldest ends), and
// certificate GETs without a cookie reuse the certificate's session.
func TestSessionCaps(t *testing.T) {
	ta := startAppWith(t, func(c *Config) {
		c.CertUser = func([]*x509.Certificate) (string, error) { return "bob", nil }
	})
	first := ta.client(t)
	first.login("alice")
	var last *apiClient
	for range maxSessionsPerUser + 5 {
		last = ta.client(t)
		last.login("alice")
	}
	ta.app.mu.Lock()
	n, total := len(ta.app.userSessions["alice"]), len(ta.app.sessions)
	ta.app.mu.Unlock()
	if n != maxSessionsPerUser || total != maxSessionsPerUser {
		t.Errorf("alice has %d sessions (%d in all), want %d", n, total, maxSessionsPerUser)
	}
	if code, _ := first.do("GET", "/api/me", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("the oldest session: %d, want 401", code)
	}
	last.must("GET", "/api/me", nil, nil)

	cert := &x509.Certificate{Raw: []byte("bob's certificate")}
	var cookies []string
	for range 10 {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080/api/me", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
		w := httptest.NewRecorder()
		ta.app.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("certificate login: %d", w.Code)
		}
		cookies = append(cookies, w.Result().Cookies()[0].Value)
	}
	ta.app.mu.Lock()
	n = len(ta.app.userSessions["bob"])
	ta.app.mu.Unlock()
	if n != 1 || cookies[0] != cookies[9] {
		t.Errorf("10 certificate GETs made %d sessions", n)
	}
}

// TestHistoryOwnRecordsPastOthers: the history API selects the user's
// own records in the store, so other users' many newer records do not
// push them out of its limit.
func TestHistoryOwnRecordsPastOthers(t *testing.T) {
	ta := startApp(t)
	ctx := t.Context()
	t0 := time.Now().Add(-time.Hour).UTC()
	ep := history.NewEndpoint("ftp", "dtn.example.org", 2811)
	if _, err := ta.hist.Add(ctx, &history.Record{Start: t0, Tool: "web", User: "alice", Kind: "download", Src: ep, Dst: history.Endpoint{Scheme: "file"}, Outcome: history.OK, Size: 1, Bytes: 1, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	for i := range 5001 {
		if _, err := ta.hist.Add(ctx, &history.Record{Start: t0.Add(time.Duration(i+1) * time.Millisecond), Tool: "web", User: "bob", Kind: "download", Src: ep, Dst: history.Endpoint{Scheme: "file"}, Outcome: history.OK, Size: 1, Bytes: 1, Duration: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	c := ta.client(t)
	c.login("alice")
	var rows []historyRow
	c.must("GET", "/api/history", nil, &rows)
	if len(rows) != 1 {
		t.Errorf("alice's history: %d rows, want her 1", len(rows))
	}
}
