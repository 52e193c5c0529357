package client_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ferrygrid/ferry/client"
)

// retryGaps runs a download whose every dial fails under pol, in a
// synctest bubble, and returns the waits between the dials.
func retryGaps(t *testing.T, pol client.RetryPolicy, deadlineAfter time.Duration) []time.Duration {
	t.Helper()
	var gaps []time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if deadlineAfter > 0 {
			pol.Deadline = start.Add(deadlineAfter)
		}
		last := start
		dials := 0
		s := &client.Session{Retry: pol, Dial: func(context.Context) (*client.Conn, error) {
			if dials > 0 {
				gaps = append(gaps, time.Since(last))
			}
			dials++
			last = time.Now()
			return nil, errors.New("connection refused")
		}}
		if _, err := s.Download(t.Context(), "/f", nil, nil); err == nil {
			t.Fatal("download succeeded without a connection")
		}
	})
	return gaps
}

func secs(ns ...float64) []time.Duration {
	var ds []time.Duration
	for _, n := range ns {
		ds = append(ds, time.Duration(n*float64(time.Second)))
	}
	return ds
}

// TestRetryWaits: the waits between attempts, as globus-url-copy's
// restart plugin spaces them (-rst-interval N fixed, 0 a doubling from one
// second without bound), and Ferry's default (doubling up to a minute).
func TestRetryWaits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pol      client.RetryPolicy
		deadline time.Duration
		want     []time.Duration
	}{
		{"fixed", client.RetryPolicy{Retries: 4, Interval: 3 * time.Second, MaxInterval: 3 * time.Second}, 0, secs(3, 3, 3, 3)},
		{"unbounded back-off", client.RetryPolicy{Retries: 8, Interval: time.Second, MaxInterval: math.MaxInt64}, 0, secs(1, 2, 4, 8, 16, 32, 64, 128)},
		{"default", client.RetryPolicy{Retries: 7}, 0, secs(2, 4, 8, 16, 32, 60, 60)},
		{"max below interval", client.RetryPolicy{Retries: 2, Interval: 5 * time.Second, MaxInterval: time.Second}, 0, secs(5, 5)},
		// Failures at 0, 2, 4 and 6 s: the one at 6 s is past the
		// deadline (5 s) and is not retried, though retries are left;
		// the retry after 4 s starts after the deadline all the same.
		{"deadline", client.RetryPolicy{Retries: 100, Interval: 2 * time.Second, MaxInterval: 2 * time.Second}, 5 * time.Second, secs(2, 2, 2)},
		// A failure at the deadline itself is still retried (only a
		// later one is not, as in globus-url-copy).
		{"deadline exactly", client.RetryPolicy{Retries: 100, Interval: 2 * time.Second, MaxInterval: 2 * time.Second}, 4 * time.Second, secs(2, 2, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryGaps(t, tc.pol, tc.deadline); !slices.Equal(got, tc.want) {
				t.Errorf("waits %v, want %v", got, tc.want)
			}
		})
	}
}

// TestConnectRetries: Connect waits for a server that cannot be reached
// as the policy spaces retries; without retries it tries once, and a
// refusal (a bad login) is not tried again.
func TestConnectRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		s := &client.Session{Retry: client.RetryPolicy{Retries: 3, Interval: 2 * time.Second, MaxInterval: 2 * time.Second}, Dial: func(context.Context) (*client.Conn, error) {
			at = append(at, time.Since(start))
			return nil, errors.New("connection refused")
		}}
		if _, err := s.Connect(t.Context()); err == nil {
			t.Fatal("connected")
		}
		if want := secs(0, 2, 4, 6); !slices.Equal(at, want) {
			t.Errorf("dials at %v, want %v", at, want)
		}
		at = nil
		s.Retry = client.RetryPolicy{}
		s.Connect(t.Context())
		if len(at) != 1 {
			t.Errorf("no retries: %d dials", len(at))
		}
		at = nil
		s.Retry = client.RetryPolicy{Retries: 3}
		s.Dial = func(context.Context) (*client.Conn, error) {
			at = append(at, time.Since(start))
			return nil, &client.ReplyError{Reply: client.Reply{Code: 530, Lines: []string{"Login incorrect."}}}
		}
		s.Connect(t.Context())
		if len(at) != 1 {
			t.Errorf("a bad login: %d dials", len(at))
		}
	})
}
