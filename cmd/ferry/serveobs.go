package main

import (
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrygrid/ferry/internal/metrics"
	"github.com/ferrygrid/ferry/server"
)

// serveObservers are the observers of a ferry serve: Prometheus metrics
// (-metrics).
type serveObservers struct {
	observers []server.Observer
	reg       *prometheus.Registry // nil without -metrics
}

func newServeObservers(metricsAddr string) *serveObservers {
	o := &serveObservers{}
	if metricsAddr != "" {
		o.reg = metrics.NewRegistry()
		o.observers = append(o.observers, metrics.NewServer(o.reg))
	}
	return o
}

// privsep returns the function told of each privsep helper start, nil
// when nothing counts them; running reports how many run.
func (o *serveObservers) privsep(running func() int) func(error) {
	if o.reg == nil {
		return nil
	}
	return metrics.NewPrivsep(o.reg, running).Started
}

// start serves the metrics of srv, when asked for; stop ends that.
func (o *serveObservers) start(srv *server.Server, addr string, out io.Writer, log *slog.Logger) (stop func(), err error) {
	if o.reg == nil {
		return func() {}, nil
	}
	if up, total := srv.Movers(); up > 0 || total > 0 {
		metrics.RegisterMovers(o.reg, srv.Movers)
	}
	ep, err := startMetrics(addr, o.reg, out, log)
	if err != nil {
		return nil, err
	}
	return func() {
		if err := ep.stop(); err != nil {
			log.Warn("metrics endpoint", "err", err)
		}
	}, nil
}
