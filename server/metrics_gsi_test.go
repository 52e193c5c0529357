package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	ftpclient "github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/metrics"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
	"github.com/ferrygrid/ferry/internal/translog"
	"github.com/ferrygrid/ferry/server"
)

// TestMetricsGSIAndTLS: GSI and AUTH TLS handshakes are counted with their
// latency, logins by method, and the accounting line of a GSI user's
// transfer carries the certificate's DN.
func TestMetricsGSIAndTLS(t *testing.T) {
	pki := gsipki.New(t, "")
	reg := metrics.NewRegistry()
	var lines bytes.Buffer
	tl, err := translog.Open("-", &lines, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := gsiServer(t, pki, func(cfg *server.Config) {
		cfg.Observers = []server.Observer{metrics.NewServer(reg), server.TransferFunc(tl.Transfer)}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c := gsiSession(t, pki, addr)
	if _, err := c.Store(ctx, "/gsi.dat", bytes.NewReader(make([]byte, 3000)), nil); err != nil {
		t.Fatal(err)
	}
	var rec translog.Record
	if err := json.Unmarshal(lines.Bytes(), &rec); err != nil {
		t.Fatalf("%q: %v", lines.String(), err)
	}
	if rec.DN != gsipki.UserDN || rec.User != gsipki.Account || rec.Bytes != 3000 || rec.Code != 226 {
		t.Errorf("GSI upload line: %+v", rec)
	}

	trust, err := ftpclient.LoadTrustStore(pki.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ftpclient.Dial(ctx, addr, &ftpclient.Config{FTPS: &ftpclient.FTPSConfig{Trust: trust}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Login(ctx, "pwuser", "right"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ferry_handshakes_total", map[string]string{"mech": "gsi", "outcome": "ok"}, 1},
		{"ferry_handshakes_total", map[string]string{"mech": "tls", "outcome": "ok"}, 1},
		{"ferry_handshake_duration_seconds", map[string]string{"mech": "gsi"}, 1},
		{"ferry_handshake_duration_seconds", map[string]string{"mech": "tls"}, 1},
		{"ferry_logins_total", map[string]string{"auth": "gsi"}, 1},
		{"ferry_logins_total", map[string]string{"auth": "password"}, 1},
		{"ferry_sessions", map[string]string{"auth": "gsi"}, 1},
		{"ferry_sessions", map[string]string{"auth": "password"}, 1},
	} {
		if got := metricValue(t, reg, w.name, w.labels); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
		}
	}
}
