package main

import (
	"context"
	"errors"
	"log/slog"
	"os/user"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi/memory"
)

// fakeHelper is a helperFS that runs until closed.
type fakeHelper struct{ *memory.FS }

func (fakeHelper) Err() error   { return nil }
func (fakeHelper) Close() error { return nil }

// TestPrivsepHelperStartPerAccount: an account whose helper start hangs
// (its owner SIGSTOPs it before hello) delays neither another account's
// login, nor, beyond the start timeout, its own.
func TestPrivsepHelperStartPerAccount(t *testing.T) {
	var names []string
	for _, n := range []string{"daemon", "bin", "sys", "nobody", "games", "man"} {
		if u, err := user.Lookup(n); err == nil && u.Uid != "0" {
			names = append(names, n)
		}
	}
	if len(names) < 2 {
		t.Skip("needs two non-root accounts on this host")
	}
	stuck, other := names[0], names[1]
	h := &userHelpers{root: "/", log: slog.New(slog.DiscardHandler)}
	stuckStarted := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	h.start = func(ctx context.Context, exe, root, account string) (helperFS, error) {
		if account == stuck {
			close(stuckStarted)
			select { // a helper that never says hello
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-release:
				return nil, errors.New("released")
			}
		}
		return fakeHelper{memory.New()}, nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stuckDone := make(chan error, 1)
	go func() {
		_, err := h.storage(ctx, stuck)
		stuckDone <- err
	}()
	<-stuckStarted

	// The other account logs in while the stuck start is still under way
	// (the test holds it until then, whatever the start timeout).
	otherDone := make(chan error, 1)
	go func() {
		_, err := h.storage(ctx, other)
		otherDone <- err
	}()
	select {
	case err := <-otherDone:
		if err != nil {
			t.Fatalf("%s's helper: %v", other, err)
		}
	case err := <-stuckDone:
		t.Fatalf("%s's login waited for %s's stuck helper start (which ended: %v)", other, stuck, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s's login is blocked behind %s's stuck helper start", other, stuck)
	}
	if n := h.count(); n != 1 {
		t.Errorf("count = %d, want 1", n)
	}

	// The stuck start itself gives up after helperStartTimeout.
	select {
	case err := <-stuckDone:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stuck start: %v, want a deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("a helper start that never says hello was not given up after %v", helperStartTimeout)
	}
}
