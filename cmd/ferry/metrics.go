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

	"github.com/ferrygrid/ferry/internal/metrics"
)

// metricsEndpoint serves a registry's metrics over HTTP at /metrics
// (ferry serve -metrics, ferry mover -metrics).
type metricsEndpoint struct {
	srv  *http.Server
	done chan error
}

// startMetrics listens on addr ("host:port"; port 0 picks one) and serves
// reg's metrics at /metrics, saying where on out.
func startMetrics(addr string, reg *prometheus.Registry, out io.Writer, log *slog.Logger) (*metricsEndpoint, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg))
	m := &metricsEndpoint{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
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
