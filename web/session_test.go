package web

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"
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
