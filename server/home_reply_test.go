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
