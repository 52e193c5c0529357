package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"

	"github.com/ferrygrid/ferry/internal/metrics"
)

// metricsEndpoint serves a registry's metrics over HTTP at /metrics
// (ferry serve -metrics, ferry mover -metrics).
type metricsEndpoint struct {
	srv  *http.Server
	done chan error
}

// maxMetricsConns caps the connections the metrics endpoint serves at
// once; more wait in the listen queue. Scrapers need one or two: the cap
// keeps idle or slow connections from eating the process's descriptors,
// which the FTP listener needs.
const maxMetricsConns = 16

// startMetrics listens on addr ("host:port"; port 0 picks one) and serves
// reg's metrics at /metrics, saying where on out. At most maxMetricsConns
// connections are served at once, and each is closed when idle or slow
// for long: the endpoint is not meant for the open Internet (bind it to
// loopback or a management network).
func startMetrics(addr string, reg *prometheus.Registry, out io.Writer, log *slog.Logger) (*metricsEndpoint, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	l = netutil.LimitListener(l, maxMetricsConns)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg))
	m := &metricsEndpoint{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       15 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       30 * time.Second,
			MaxHeaderBytes:    16 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		done: make(chan error, 1),
	}
	fmt.Fprintf(out, "Metrics at http://%s/metrics\n", l.Addr())
	go func() { m.done <- m.srv.Serve(l) }()
	return m, nil
}

// stop shuts the endpoint down, letting scrapes under way finish for a
// few seconds.
func (m *metricsEndpoint) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if serr := <-m.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
