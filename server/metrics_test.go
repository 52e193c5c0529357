package server_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	ftpclient "github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/metrics"
	"github.com/ferrygrid/ferry/server"
)

// metricValue is the value of the series name{labels} in reg, 0 when absent.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue series
				}
			}
			return value(m)
		}
	}
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestMetrics: transfers, logins (good and refused) and replies are
// counted with the right labels, by a real server observed by
// internal/metrics.
func TestMetrics(t *testing.T) {
	reg := metrics.NewRegistry()
	obs := metrics.NewServer(reg)
	_, addr, _ := start(t, server.Config{
		Storage: memory.New(), Anonymous: true, AnonymousWrite: true,
		Authenticate: func(ctx context.Context, user, pass string) (*server.Account, error) {
			return nil, server.ErrLoginDenied
		},
		LoginFailureDelay: -1,
		Observers:         []server.Observer{obs},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A refused password login.
	bad := dial(t, addr)
	bad.read()
	bad.expect("USER bob", 331)
	bad.expect("PASS wrong", 530)
	if got := metricValue(t, reg, "ferry_logins_refused_total", map[string]string{"auth": "password"}); got != 1 {
		t.Errorf("refused password logins: %v, want 1", got)
	}

	c, err := ftpclient.Dial(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(ctx, "anonymous", "x"); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, reg, "ferry_sessions", map[string]string{"auth": "anonymous"}); got != 1 {
		t.Errorf("anonymous sessions: %v, want 1", got)
	}
	data := bytes.Repeat([]byte("ferry"), 20000) // 100000 bytes
	if _, err := c.Store(ctx, "/f", bytes.NewReader(data), nil); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := c.Retrieve(ctx, "/f", &got, nil); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data))
	if _, err := c.RetrieveAt(ctx, "/f", &writerAt{buf}, &ftpclient.RetrieveOptions{Parallel: 4}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ferry_transfers_total", map[string]string{"direction": "upload", "mode": "stream", "outcome": "ok"}, 1},
		{"ferry_transfers_total", map[string]string{"direction": "download", "mode": "stream", "outcome": "ok"}, 1},
		{"ferry_transfers_total", map[string]string{"direction": "download", "mode": "eblock", "outcome": "ok"}, 1},
		{"ferry_transfer_bytes_total", map[string]string{"direction": "upload", "mode": "stream"}, 100000},
		{"ferry_transfer_bytes_total", map[string]string{"direction": "download", "mode": "stream"}, 100000},
		{"ferry_transfer_bytes_total", map[string]string{"direction": "download", "mode": "eblock"}, 100000},
		{"ferry_data_connections_total", map[string]string{"direction": "download", "mode": "eblock"}, 4},
		{"ferry_transfers_running", map[string]string{"direction": "download", "mode": "eblock"}, 0},
		{"ferry_logins_total", map[string]string{"auth": "anonymous"}, 1},
		{"ferry_replies_total", map[string]string{"code": "530"}, 1},
		{"ferry_replies_total", map[string]string{"code": "226"}, 3},
	} {
		if got := metricValue(t, reg, w.name, w.labels); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
		}
	}
	if got := metricValue(t, reg, "ferry_transfer_streams", map[string]string{"direction": "download", "mode": "eblock"}); got != 1 {
		t.Errorf("stream histogram samples: %v, want 1", got)
	}

	// A failed upload: the data ends before the size announced (ALLO).
	if _, err := c.Store(ctx, "/short", strings.NewReader("tiny"), &ftpclient.StoreOptions{Size: 100}); err == nil {
		t.Fatal("a short upload succeeded")
	}
	if got := metricValue(t, reg, "ferry_transfers_total", map[string]string{"direction": "upload", "mode": "stream", "outcome": "transient"}); got != 1 {
		t.Errorf("failed uploads: %v, want 1", got)
	}
	c.Quit(ctx)
	waitFor(t, func() bool {
		return metricValue(t, reg, "ferry_sessions", map[string]string{"auth": "anonymous"}) == 0
	})
}

type writerAt struct{ b []byte }

func (w *writerAt) WriteAt(p []byte, off int64) (int, error) { return copy(w.b[off:], p), nil }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
