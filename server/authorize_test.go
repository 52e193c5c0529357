package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/pi"
)

// authRequest is a kind of login request of TestAuthorize: anonymous,
// password, certificate, certificate+password or map-me
// (":globus-mapping:" without identity), on a protected channel or not.
type authRequest struct {
	kind      string
	protected bool
}

// authServer is a server set-up of TestAuthorize: which of the
// anonymous login, the password hook and a host credential it has.
type authServer struct {
	anonymous, passwords, hostCred bool
}

// TestAuthorize is the login decision over every kind of request, on
// protected and unprotected channels, with and without the hooks that
// would check it. Anything not listed as allowed must be denied.
func TestAuthorize(t *testing.T) {
	id := &gsi.Identity{DN: "/C=US/O=FerryTest/CN=Someone"}
	requests := []authRequest{}
	for _, k := range []string{"anonymous", "password", "certificate", "certificate+password", "map-me"} {
		requests = append(requests, authRequest{k, false}, authRequest{k, true})
	}
	servers := []authServer{}
	for _, a := range []bool{false, true} {
		for _, p := range []bool{false, true} {
			for _, h := range []bool{false, true} {
				servers = append(servers, authServer{a, p, h})
			}
		}
	}
	for _, sv := range servers {
		for _, rq := range requests {
			name := fmt.Sprintf("anon=%v,passwd=%v,hostcred=%v/%s,protected=%v", sv.anonymous, sv.passwords, sv.hostCred, rq.kind, rq.protected)
			t.Run(name, func(t *testing.T) {
				checkAuthorize(t, sv, rq, id)
			})
		}
	}
}

// checkAuthorize checks the decision of a server set up as sv on the
// request rq (with identity id where it has one).
func checkAuthorize(t *testing.T, sv authServer, rq authRequest, id *gsi.Identity) {
	t.Helper()
	p := &loginPolicy{anonymous: sv.anonymous}
	if sv.passwords {
		p.authenticate = func(ctx context.Context, user, pass string) (*Account, error) { return nil, ErrLoginDenied }
	}
	if sv.hostCred {
		p.sec = &pi.Security{}
	}
	want := wantLogin(sv, rq)
	got, err := p.authorize(authLoginRequest(rq, id))
	if got != want {
		t.Fatalf("authorize = %v (%v), want %v", got, err, want)
	}
	if (got == denyLogin) != (err != nil) {
		t.Fatalf("decision %v with error %v", got, err)
	}
	if err != nil && !errors.Is(err, pi.ErrLoginDenied) {
		t.Fatalf("a denial must be ErrLoginDenied: %v", err)
	}
	if err != nil && sv.hostCred && sv.passwords && rq.kind == "password" && !rq.protected && !errors.Is(err, pi.ErrProtectionRequired) {
		t.Fatalf("a password on an unprotected channel must say protection is required: %v", err)
	}
}

// authLoginRequest is the login request of rq.
func authLoginRequest(rq authRequest, id *gsi.Identity) pi.LoginRequest {
	r := pi.LoginRequest{Protected: rq.protected}
	switch rq.kind {
	case "anonymous":
		r.User, r.Password = "anonymous", "me@example.org"
	case "password":
		r.User, r.Password = "alice", "secret"
	case "certificate":
		r.User, r.Identity = ":globus-mapping:", id
	case "certificate+password":
		r.User, r.Password, r.Identity = "alice", "secret", id
	case "map-me":
		r.User, r.Password = ":globus-mapping:", "x"
	}
	return r
}

// wantLogin is the expected decision on rq by a server set up as sv,
// written out rule by rule.
func wantLogin(sv authServer, rq authRequest) loginMethod {
	want := denyLogin
	switch {
	case rq.kind == "anonymous" && sv.anonymous:
		want = anonymousLogin
	case rq.kind == "map-me" && sv.anonymous:
		want = anonymousLogin // GCT's reading of it
	case rq.kind == "certificate" && rq.protected:
		want = certificateLogin
	case rq.kind == "certificate+password" && rq.protected && !sv.passwords:
		want = certificateLogin
	case rq.kind == "certificate" || rq.kind == "certificate+password":
		// an identity on an unprotected channel: refused;
		// with passwords, a password login on a protected channel.
		if rq.kind == "certificate+password" && rq.protected && sv.passwords {
			want = passwordLogin
		}
	case rq.kind == "map-me":
	case !sv.passwords:
	case sv.hostCred && !rq.protected:
	default:
		want = passwordLogin
	}
	return want
}
