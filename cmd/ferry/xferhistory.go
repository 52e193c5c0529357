package main

// The transfer history of the client commands (cp, sync, shell): the
// copy engine records every file transfer in the database that -history
// (or $FERRY_HISTORY) names, the default SQLite file otherwise, and
// "off" turns it off. The database is opened when the first record is
// written, by the engine's writer, so that neither a slow nor an
// unreachable one holds up a copy; one that cannot be opened costs a
// warning on stderr.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	hist "github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/transfer"
)

// historyFlagUsage is the usage of the -history flag of cp and sync.
const historyFlagUsage = "record every transfer in the history database `DSN`: a file path or postgres://...; \"off\": no history (default $FERRY_HISTORY, else " +
	"~/.local/share/ferry/history.db); see ferry history"

// historyDSNUsage is the usage of the -history flag of the commands that
// read the history or store probes (history, probe, advise, web).
const historyDSNUsage = "the history `DSN`: a file, a postgres:// URL or off (default $" + hist.EnvDSN + ", else the SQLite file under $XDG_DATA_HOME/ferry)"

// engineCloseTimeout bounds the wait for the last history records when
// a command ends.
var engineCloseTimeout = 30 * time.Second

// lazyHistory is a hist.Store opened on first use (OpenOrOff: a
// database that cannot be opened records nothing, after a warning).
type lazyHistory struct {
	dsn  string
	log  *slog.Logger
	once sync.Once
	s    hist.Store // set by once
}

func (l *lazyHistory) store() hist.Store {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), engineCloseTimeout)
		defer cancel()
		l.s = hist.OpenOrOff(ctx, l.dsn, l.log)
	})
	return l.s
}

func (l *lazyHistory) Add(ctx context.Context, r *hist.Record) (int64, error) {
	return l.store().Add(ctx, r)
}

// AddBatch stores rs with one transaction when the store allows it.
func (l *lazyHistory) AddBatch(ctx context.Context, rs []*hist.Record) error {
	return hist.AddAll(ctx, l.store(), rs)
}

func (l *lazyHistory) AddProbe(ctx context.Context, p *hist.Probe) (int64, error) {
	return l.store().AddProbe(ctx, p)
}

func (l *lazyHistory) Records(ctx context.Context, f hist.Filter) ([]hist.Record, error) {
	return l.store().Records(ctx, f)
}

func (l *lazyHistory) Probes(ctx context.Context, f hist.Filter) ([]hist.Probe, error) {
	return l.store().Probes(ctx, f)
}

func (l *lazyHistory) Links(ctx context.Context, f hist.Filter) ([]hist.LinkSummary, error) {
	return l.store().Links(ctx, f)
}

// Close closes the store if it was opened.
func (l *lazyHistory) Close() error {
	var err error
	l.once.Do(func() {}) // never opened: nothing to close
	if l.s != nil {
		err = l.s.Close()
	}
	return err
}

var (
	_ hist.Store      = (*lazyHistory)(nil)
	_ hist.BatchAdder = (*lazyHistory)(nil)
)

// historyStore is the store of the -history flag value dsn for the
// engine: nil for "off".
func historyStore(e *env, flagValue string) hist.Store {
	dsn := hist.DSN(flagValue)
	if dsn == hist.OffDSN {
		return nil
	}
	return &lazyHistory{dsn: dsn, log: warnLogger(e)}
}

// warnLogger logs warnings and errors on stderr.
func warnLogger(e *env) *slog.Logger {
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// closeEngine waits for the engine's last history records and closes
// its history.
func closeEngine(eng *transfer.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), engineCloseTimeout)
	defer cancel()
	eng.Close(ctx)
	if eng.History != nil {
		eng.History.Close()
	}
}

// dataChannelParams are the DCAU and PROT the gsi flags ask for, as the
// history records them ("" for the defaults, A and C).
func dataChannelParams(g *gsiFlags) (dcau, prot string) {
	if g == nil {
		return "", ""
	}
	switch {
	case g.noDCAU:
		dcau = "N"
	case g.dcSafe:
		prot = "S"
	case g.dcPriv:
		prot = "P"
	}
	return dcau, prot
}
