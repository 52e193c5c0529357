package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ferrygrid/ferry/internal/xfer"
)

func TestTransferLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewServer(reg)
	start := time.Now()
	tr := &xfer.Summary{Op: "STOR", Upload: true, Mode: xfer.ModeEBlock, Start: start}
	m.Transfer(tr)
	if got := testutil.ToFloat64(m.transfers.running.WithLabelValues(Upload, ModeEBlock)); got != 1 {
		t.Fatalf("running = %v, want 1", got)
	}
	tr.End, tr.Bytes, tr.Code, tr.Streams, tr.Opened, tr.Retransmits = start.Add(time.Second), 4<<20, 226, 4, 4, 3
	m.Transfer(tr)
	checks := []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.transfers.running.WithLabelValues(Upload, ModeEBlock), 0},
		{m.transfers.done.WithLabelValues(Upload, ModeEBlock, OutcomeOK), 1},
		{m.transfers.done.WithLabelValues(Download, ModeEBlock, OutcomeOK), 0},
		{m.transfers.bytes.WithLabelValues(Upload, ModeEBlock), 4 << 20},
		{m.transfers.conns.WithLabelValues(Upload, ModeEBlock), 4},
		{m.transfers.retransmits.WithLabelValues(Upload, ModeEBlock), 3},
	}
	for i, c := range checks {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("check %d: %v, want %v", i, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.transfers.rate); n != 4 {
		t.Errorf("rate histograms: %d series, want 4 (one per direction and mode, from the start)", n)
	}
}

func TestOutcome(t *testing.T) {
	for code, want := range map[int]string{226: OutcomeOK, 250: OutcomeOK, 426: OutcomeTransient, 451: OutcomeTransient, 550: OutcomePermanent, 0: OutcomePermanent} {
		if got := Outcome(code); got != want {
			t.Errorf("Outcome(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestSessionsAndLogins(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewServer(reg)
	m.Session("", "none")
	m.Session("none", "gsi")
	m.Session("", "none")
	m.LoginRefused("password")
	m.Handshake("gsi", 50*time.Millisecond, nil)
	m.Handshake("gsi", time.Second, errors.New("bad"))
	for _, c := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.sessions.WithLabelValues("none"), 1},
		{m.sessions.WithLabelValues("gsi"), 1},
		{m.logins.WithLabelValues("gsi"), 1},
		{m.refused.WithLabelValues("password"), 1},
		{m.handshakes.WithLabelValues("gsi", OutcomeOK), 1},
		{m.handshakes.WithLabelValues("gsi", "failed"), 1},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%v: %v, want %v", c.c, got, c.want)
		}
	}
	m.Session("gsi", "")
	if got := testutil.ToFloat64(m.sessions.WithLabelValues("gsi")); got != 0 {
		t.Errorf("gsi sessions after the end: %v", got)
	}
}

// TestReplyAllocations: replies are counted for every reply; that must not
// allocate.
func TestReplyAllocations(t *testing.T) {
	m := NewServer(prometheus.NewRegistry())
	m.Reply(226)
	if n := testing.AllocsPerRun(100, func() { m.Reply(226) }); n != 0 {
		t.Errorf("Reply allocates %v times", n)
	}
	if got := testutil.ToFloat64(m.replies.WithLabelValues("226")); got != 102 {
		t.Errorf("replies{code=226} = %v, want 102", got)
	}
}

func TestRegistriesApart(t *testing.T) {
	// Two servers in one process, each with its registry.
	a, b := NewRegistry(), NewRegistry()
	NewServer(a)
	NewServer(b)
	RegisterMovers(a, func() (int, int) { return 2, 3 })
	NewPrivsep(b, func() int { return 1 }).Started(nil)
	if n, err := testutil.GatherAndCount(a, "ferry_movers"); err != nil || n != 2 {
		t.Errorf("ferry_movers: %d series, %v", n, err)
	}
	if err := testutil.GatherAndCompare(b, strings.NewReader(`# HELP ferry_privsep_helpers Privilege-separation helper processes (one per mapped account in use).
# TYPE ferry_privsep_helpers gauge
ferry_privsep_helpers 1
`), "ferry_privsep_helpers"); err != nil {
		t.Error(err)
	}
}
