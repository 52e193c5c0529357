package server

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/pi"
)

// TestMappedAccountPolicy: every way a mapped account's storage can fail
// refuses the login; none becomes the server's own (root) identity unless
// the configuration says so.
func TestMappedAccountPolicy(t *testing.T) {
	root := os.Geteuid() == 0
	own := memory.New()
	helper := memory.New()
	ctx := context.Background()
	cases := []struct {
		name    string
		account string
		cfg     Config
		want    dsi.Storage // nil: refused
	}{
		{"unknown account, no per-user storage", "ferry-no-such-user", Config{}, map[bool]dsi.Storage{true: nil, false: own}[root]},
		{"unknown account, per-user storage", "ferry-no-such-user", Config{UserStorage: func(context.Context, string) (dsi.Storage, error) { return helper, nil }}, nil},
		{"unknown account, served as server", "ferry-no-such-user", Config{ServeMappedAsServer: true}, map[bool]dsi.Storage{true: nil, false: own}[root]},
		{"uid 0", "root", Config{ServeMappedAsServer: true}, nil},
		{"uid 0, per-user storage", "root", Config{UserStorage: func(context.Context, string) (dsi.Storage, error) { return helper, nil }}, nil},
		{"per-user storage gives none", "nobody", Config{UserStorage: func(context.Context, string) (dsi.Storage, error) { return nil, nil }}, nil},
		{"per-user storage fails", "nobody", Config{UserStorage: func(context.Context, string) (dsi.Storage, error) { return nil, errors.New("helper died") }}, nil},
		{"per-user storage", "nobody", Config{UserStorage: func(context.Context, string) (dsi.Storage, error) { return helper, nil }}, helper},
		{"no per-user storage", "nobody", Config{}, map[bool]dsi.Storage{true: nil, false: own}[root]},
		{"no per-user storage, served as server", "nobody", Config{ServeMappedAsServer: true}, own},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Storage = own
			s := &Server{cfg: c.cfg}
			st, err := s.userStorage(ctx, c.account)
			if c.want == nil {
				if err == nil || !errors.Is(err, pi.ErrLoginDenied) {
					t.Fatalf("root=%v: got storage %v, err %v; want a refusal", root, st, err)
				}
				return
			}
			if err != nil || st != c.want {
				t.Fatalf("root=%v: got %v, %v; want the %s storage", root, st, err, map[bool]string{true: "server's", false: "helper's"}[c.want == own])
			}
		})
	}
}
