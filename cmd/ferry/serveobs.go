package main

import (
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrygrid/ferry/internal/metrics"
	"github.com/ferrygrid/ferry/internal/translog"
	"github.com/ferrygrid/ferry/server"
)

// serveObservers are the observers of a ferry serve: Prometheus metrics
// (-metrics) and the accounting log (-transfer-log).
type serveObservers struct {
	observers []server.Observer
	reg       *prometheus.Registry // nil without -metrics
	tlog      *translog.Log        // nil without -transfer-log
	tlogFile  string
}

// newServeObservers sets up the metrics registry and opens the transfer
// log, as asked; close ends them.
func newServeObservers(metricsAddr, transferLog string, stdout io.Writer, log *slog.Logger) (*serveObservers, error) {
	o := &serveObservers{}
	if metricsAddr != "" {
		o.reg = metrics.NewRegistry()
		o.observers = append(o.observers, metrics.NewServer(o.reg))
	}
	if transferLog != "" {
		tl, err := translog.Open(transferLog, stdout, log)
		if err != nil {
			return nil, err
		}
		o.tlog, o.tlogFile = tl, transferLog
		o.observers = append(o.observers, server.TransferFunc(tl.Transfer))
	}
	return o, nil
}

// close closes the transfer log.
func (o *serveObservers) close() {
	if o.tlog != nil {
		o.tlog.Close()
	}
}

// reopen reopens the transfer log, if there is one (log rotation: rename
// the file, then send SIGHUP); the old file stays in use on failure.
func (o *serveObservers) reopen(log *slog.Logger) {
	if o.tlog == nil {
		return
	}
	if err := o.tlog.Reopen(); err != nil {
		log.Error("SIGHUP: transfer log not reopened; still writing the old file", "file", o.tlogFile, "err", err)
		return
	}
	log.Info("SIGHUP: transfer log reopened", "file", o.tlogFile)
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
