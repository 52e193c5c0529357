package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/pi"
)

// TestAuthorize is the login decision over every kind of request, on
// protected and unprotected channels, with and without the hooks that
// would check it. Anything not listed as allowed must be denied.
func TestAuthorize(t *testing.T) {
	id := &gsi.Identity{DN: "/C=US/O=FerryTest/CN=Someone"}
	password := func(ctx context.Context, user, pass string) (*Account, error) { return nil, ErrLoginDenied }
	type req struct {
		kind      string // anonymous, password, certificate, map-me (":globus-mapping:" without identity)
		protected bool
	}
	requests := []req{}
	for _, k := range []string{"anonymous", "password", "certificate", "certificate+password", "map-me"} {
		requests = append(requests, req{k, false}, req{k, true})
	}
	type server struct {
		anonymous, passwords, hostCred bool
	}
	servers := []server{}
	for _, a := range []bool{false, true} {
		for _, p := range []bool{false, true} {
			for _, h := range []bool{false, true} {
				servers = append(servers, server{a, p, h})
			}
		}
	}
	for _, sv := range servers {
		for _, rq := range requests {
			name := fmt.Sprintf("anon=%v,passwd=%v,hostcred=%v/%s,protected=%v", sv.anonymous, sv.passwords, sv.hostCred, rq.kind, rq.protected)
			t.Run(name, func(t *testing.T) {
				s := &Server{cfg: Config{Storage: memory.New(), Anonymous: sv.anonymous}}
				if sv.passwords {
					s.cfg.Authenticate = password
				}
				if sv.hostCred {
					s.pi.Security = &pi.Security{}
				}
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
				// The expected decision, written out rule by rule.
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
				got, err := s.authorize(r)
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
			})
		}
	}
}
