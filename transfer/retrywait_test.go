package transfer

import (
	"math"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
)

// TestRetryWaitsOfOptions: the first and longest wait between retries
// of Options (those of client.RetryPolicy), and a doubling that
// saturates at the longest instead of overflowing.
func TestRetryWaitsOfOptions(t *testing.T) {
	for _, tc := range []struct {
		o             Options
		first, longer time.Duration
	}{
		{Options{}, client.DefaultRetryInterval, client.DefaultMaxRetryInterval},
		{Options{RetryInterval: 3 * time.Second, MaxRetryInterval: 3 * time.Second}, 3 * time.Second, 3 * time.Second},
		{Options{RetryInterval: 5 * time.Minute}, 5 * time.Minute, 5 * time.Minute},
		{Options{RetryInterval: time.Second, MaxRetryInterval: math.MaxInt64}, time.Second, math.MaxInt64},
	} {
		first, longest := tc.o.retryWaits()
		if first != tc.first || longest != tc.longer {
			t.Errorf("%+v: waits %v to %v, want %v to %v", tc.o, first, longest, tc.first, tc.longer)
		}
		p := tc.o.retryPolicy()
		if p.Interval != tc.o.RetryInterval || p.MaxInterval != tc.o.MaxRetryInterval || !p.Deadline.Equal(tc.o.RetryDeadline) {
			t.Errorf("%+v: policy %+v", tc.o, p)
		}
	}
	w := time.Second
	for range 100 {
		next := nextWait(w, math.MaxInt64)
		if next < w {
			t.Fatalf("after %v: %v", w, next)
		}
		w = next
	}
	if w != math.MaxInt64 {
		t.Errorf("after 100 doublings: %v, want the longest", w)
	}
	if got := nextWait(40*time.Second, time.Minute); got != time.Minute {
		t.Errorf("40s doubled up to a minute: %v", got)
	}
}

// TestRetryLate: RetryDeadline passes strictly after it.
func TestRetryLate(t *testing.T) {
	d := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := Options{RetryDeadline: d}
	if o.retryLate(d) || !o.retryLate(d.Add(time.Nanosecond)) || (&Options{}).retryLate(d) {
		t.Error("retryLate: wrong side of the deadline")
	}
}
