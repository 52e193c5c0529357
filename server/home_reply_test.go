package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/server"
)

// TestMissingHomeSaysWhy: a user whose password is right but whose home
// does not exist is told why the login failed; a wrong password is not
// told anything about homes.
func TestMissingHomeSaysWhy(t *testing.T) {
	_, addr, _ := start(t, server.Config{
		Storage: memory.New(),
		Authenticate: func(ctx context.Context, user, pass string) (*server.Account, error) {
			if pass != "right" {
				return nil, server.ErrLoginDenied
			}
			return &server.Account{Name: user, Home: "/no/such/home"}, nil
		},
		LoginFailureDelay: -1,
	})
	c := dial(t, addr)
	c.read()
	c.expect("USER bob", 331)
	c.send("PASS right")
	if r := c.read(); r.Code != 530 || !strings.Contains(strings.Join(r.Lines, " "), "home directory") {
		t.Fatalf("right password, missing home: %v; want 530 saying the home is missing", r)
	}
	c.expect("USER bob", 331)
	c.send("PASS wrong")
	if r := c.read(); r.Code != 530 || strings.Contains(strings.Join(r.Lines, " "), "home") {
		t.Fatalf("wrong password: %v; want a bare 530", r)
	}
}

// TestGlobusMappingAnonymous: without a certificate, ":globus-mapping:" is
// an anonymous name on a server that allows anonymous logins (as GCT's
// server reads it; GCT clients send it by default), and nothing more.
func TestGlobusMappingAnonymous(t *testing.T) {
	_, addr, _ := start(t, server.Config{Storage: memory.New(), Anonymous: true})
	c := dial(t, addr)
	c.read()
	c.expect("USER :globus-mapping:", 331)
	c.expect("PASS x", 230)
	c.send("SITE WHOAMI")
	if r := c.read(); r.Code != 200 || !strings.Contains(strings.Join(r.Lines, " "), "anonymous") {
		t.Fatalf("SITE WHOAMI: %v", r)
	}
	c.expect("MKD /d", 550) // read-only, as anonymous
}
