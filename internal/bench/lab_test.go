package bench

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestLabRuns(t *testing.T) {
	type run struct {
		kind string
		rep  int
	}
	got, err := labRuns(t.Context(), 2, []string{"a", "b"}, func(k string, rep int) run { return run{k, rep} })
	if want := []run{{"a", 0}, {"b", 0}, {"a", 1}, {"b", 1}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("labRuns = %v, %v; want %v (the kinds in turn within each repetition)", got, err, want)
	}

	// A run that the context's end interrupted is left out.
	cause := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(t.Context())
	got, err = labRuns(ctx, 3, []string{"a", "b"}, func(k string, rep int) run {
		if k == "b" && rep == 1 {
			cancel(cause)
		}
		return run{k, rep}
	})
	if want := []run{{"a", 0}, {"b", 0}, {"a", 1}}; !errors.Is(err, cause) || !slices.Equal(got, want) {
		t.Errorf("cancelled labRuns = %v, %v; want %v, %v", got, err, want, cause)
	}
}

func TestLabRunLine(t *testing.T) {
	var b bytes.Buffer
	labRunLine(&b, "stripe ferry n=2", 0, "", 1e6, 80*time.Millisecond, "", cpuShare{Busy: 1.5, Steal: 0.012})
	labRunLine(&b, "replicas multi", 1, "", 1e6, time.Second, "read [1 2]; ", cpuShare{})
	labRunLine(&b, "replicas killed", 2, "ferry cp: exit status 1", 1e6, 0, "", cpuShare{})
	want := "bench: stripe ferry n=2 rep 1: 100 Mbit/s (1000000 bytes in 80ms; 1.50 cores busy, 1.2% stolen)\n" +
		"bench: replicas multi rep 2: 8 Mbit/s (1000000 bytes in 1s; read [1 2]; 0.00 cores busy, 0.0% stolen)\n" +
		"bench: replicas killed rep 3: ferry cp: exit status 1\n"
	if b.String() != want {
		t.Errorf("lines\n%s\nwant\n%s", b.String(), want)
	}
	if got := labRunFields("", 1e6, time.Second); !slices.Equal(got, []string{"1.000", "8.0"}) {
		t.Errorf("fields of a run: %q", got)
	}
	if got := labRunFields("failed", 1e6, 0); !slices.Equal(got, []string{"0.000", ""}) {
		t.Errorf("fields of a failed run: %q", got)
	}
}
