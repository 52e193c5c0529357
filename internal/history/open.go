package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	sqlitedriver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// OffDSN is the DSN that turns history off: Open returns an Off.
const OffDSN = "off"

// EnvDSN is the environment variable that names the history database
// when no flag does.
const EnvDSN = "FERRY_HISTORY"

// ConnectTimeout bounds how long Open tries to reach a PostgreSQL server
// (unless the DSN sets connect_timeout itself).
const ConnectTimeout = 5 * time.Second

// busyTimeout is how long an SQLite statement waits for another
// connection's (or process's) write lock before it fails.
const busyTimeout = 30 * time.Second

// DSN returns the history database to use: flagValue when not empty,
// else $FERRY_HISTORY, else "" (the default SQLite file).
func DSN(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(EnvDSN)
}

// DefaultPath is the SQLite file the DSN "" means:
// $XDG_DATA_HOME/ferry/history.db, or ~/.local/share/ferry/history.db
// when XDG_DATA_HOME is unset or not absolute.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ferry", "history.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("history: no default database: %w", err)
	}
	return filepath.Join(home, ".local", "share", "ferry", "history.db"), nil
}

// isPostgres reports whether dsn names a PostgreSQL database.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens the history store dsn names:
//
//   - "" the default SQLite file (DefaultPath), its directory created
//     with mode 0700;
//   - "off" (OffDSN) an Off, which records nothing;
//   - postgres://… or postgresql://… a PostgreSQL database (a libpq URL;
//     connect_timeout defaults to ConnectTimeout);
//   - anything else the path of an SQLite file, created when missing.
//
// The schema is created or migrated. An SQLite file that is not a
// database, fails SQLite's quick check or breaks a migration as a
// corrupt file does is renamed NAME.corrupt-YYYYMMDDTHHMMSS (a warning
// on log names both files) and a new database started in its place. A
// PostgreSQL server that cannot be reached is an error naming its
// host:port, within about ConnectTimeout. log may be nil.
func Open(ctx context.Context, dsn string, log *slog.Logger) (Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch {
	case dsn == OffDSN:
		return Off{}, nil
	case isPostgres(dsn):
		return openPostgres(ctx, dsn)
	}
	name := dsn
	if name == "" {
		var err error
		if name, err = DefaultPath(); err != nil {
			return nil, err
		}
	}
	return openSQLite(ctx, name, log)
}

// OpenOrOff is Open for a caller that goes on without history: on any
// error it logs a warning and returns an Off.
func OpenOrOff(ctx context.Context, dsn string, log *slog.Logger) Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := Open(ctx, dsn, log)
	if err != nil {
		log.Warn("history: not recording transfers", "err", err)
		return Off{}
	}
	return s
}

// Off is the Store of the DSN "off", and of OpenOrOff when the database
// cannot be opened: it records nothing and lists nothing.
type Off struct{}

var _ Store = Off{}

// Add records nothing and returns 0.
func (Off) Add(context.Context, *Record) (int64, error) { return 0, nil }

// AddProbe records nothing and returns 0.
func (Off) AddProbe(context.Context, *Probe) (int64, error) { return 0, nil }

// Records returns no records.
func (Off) Records(context.Context, Filter) ([]Record, error) { return nil, nil }

// Probes returns no probes.
func (Off) Probes(context.Context, Filter) ([]Probe, error) { return nil, nil }

// Links returns no links.
func (Off) Links(context.Context, Filter) ([]LinkSummary, error) { return nil, nil }

// Close does nothing.
func (Off) Close() error { return nil }

// sqliteDSN is the modernc.org/sqlite DSN of the file name: every
// connection waits up to busyTimeout for a lock and transactions begin
// IMMEDIATE (they take the write lock at once, so two never deadlock
// upgrading a read lock). The journal mode, persistent, is set once by
// trySQLite.
func sqliteDSN(name string) string {
	// A URI filename: %, ? and # in the path are escaped.
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(name))
	return "file:" + p + "?_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

// openSQLite opens (creating it if needed) the SQLite store name,
// replacing a corrupt file by a new one.
func openSQLite(ctx context.Context, name string, log *slog.Logger) (Store, error) {
	name, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	s, err := trySQLiteBusy(ctx, name)
	if err == nil {
		return s, nil
	}
	if !corrupt(err) {
		return nil, err
	}
	aside, merr := moveAside(name)
	if merr != nil {
		return nil, fmt.Errorf("history: %s is corrupt (%v) and cannot be moved aside: %w", name, err, merr)
	}
	log.Warn("history: the database is corrupt; moved it aside and started a new one",
		"path", name, "moved_to", aside, "err", err)
	if s, err = trySQLiteBusy(ctx, name); err != nil {
		return nil, err
	}
	return s, nil
}

// trySQLiteBusy is trySQLite, tried again while it fails because another
// connection holds a lock (retryBusy).
func trySQLiteBusy(ctx context.Context, name string) (*sqlStore, error) {
	return retryBusy(ctx, func() (*sqlStore, error) { return trySQLite(ctx, name) })
}

// retryBusy runs try again while it fails because another connection
// holds a lock, for up to busyTimeout. SQLite does not wait for every
// lock itself: switching a new file to WAL, which needs the file to
// itself, fails at once when another process has it open.
func retryBusy[T any](ctx context.Context, try func() (T, error)) (T, error) {
	deadline := time.Now().Add(busyTimeout)
	for {
		s, err := try()
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return s, err
		}
		t := time.NewTimer(time.Duration(10+rand.IntN(40)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return s, fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// busy reports whether err is SQLite's "database is locked".
func busy(err error) bool {
	var se *sqlitedriver.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// errCorrupt is the error of a database that fails SQLite's quick check.
var errCorrupt = errors.New("database fails its integrity check")

// corrupt reports whether err says the database file is damaged.
func corrupt(err error) bool {
	var se *sqlitedriver.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary result code
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	return errors.Is(err, errCorrupt)
}

// trySQLite opens the SQLite file name, checks it and migrates it.
func trySQLite(ctx context.Context, name string) (*sqlStore, error) {
	db, err := openSQLiteDB(ctx, name, "history")
	if err != nil {
		return nil, err
	}
	s := &sqlStore{db: db, dialect: dialectSQLite, stamp: name + checkStampSuffix}
	if checkDue(name, s.stamp) {
		if err := s.check(ctx); err != nil {
			db.Close()
			os.Remove(s.stamp)
			return nil, fmt.Errorf("history: %s: %w", name, err)
		}
		stampChecked(s.stamp)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history: %s: %w", name, err)
	}
	return s, nil
}

// openSQLiteDB opens the SQLite file name (sqliteDSN) in WAL mode; its
// errors start with prefix.
func openSQLiteDB(ctx context.Context, name, prefix string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", sqliteDSN(name))
	if err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", prefix, name, err)
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %s: %w", prefix, name, err)
	}
	if mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("%s: %s: journal mode %q, want wal", prefix, name, mode)
	}
	return db, nil
}

// The quick check reads the whole database: about 130 ms of CPU for a
// 26 MB history, paid by every ferry cp. A small file is checked at
// every Open; a larger one when its last passed check (the modification
// time of NAME.checked) is older than checkEvery, or when an operation
// since found it corrupt (noteCorrupt removes the stamp). Damage in
// between still surfaces as SQLITE_CORRUPT from the operation that meets
// it.
const checkStampSuffix = ".checked"

// Variables for tests.
var (
	checkAlwaysBelow int64        = 4 << 20
	checkEvery                    = 24 * time.Hour
	quickChecks      atomic.Int64 // checks run
)

// checkDue reports whether the database name is to be quick-checked now.
func checkDue(name, stamp string) bool {
	fi, err := os.Stat(name)
	if err != nil || fi.Size() < checkAlwaysBelow {
		return true
	}
	st, err := os.Stat(stamp)
	return err != nil || time.Since(st.ModTime()) > checkEvery || st.ModTime().After(time.Now().Add(time.Minute))
}

// stampChecked records a passed check (best effort: without the stamp
// the next Open checks again).
func stampChecked(stamp string) {
	if err := os.WriteFile(stamp, nil, 0o600); err == nil {
		now := time.Now()
		os.Chtimes(stamp, now, now)
	}
}

// check runs SQLite's quick check (a cheaper integrity_check: page and
// b-tree structure, without matching indexes to tables).
func (s *sqlStore) check(ctx context.Context) error {
	quickChecks.Add(1)
	rows, err := s.db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" && len(problems) < 5 {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", errCorrupt, strings.Join(problems, "; "))
	}
	return nil
}

// moveAside renames the corrupt database name (and its write-ahead log)
// to name.corrupt-YYYYMMDDTHHMMSS, with -2, -3, ... appended when that
// is taken, and removes its shared-memory index. It returns the new
// name.
func moveAside(name string) (string, error) {
	base := name + ".corrupt-" + time.Now().Format("20060102T150405")
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
		if i > 100 {
			return "", fmt.Errorf("history: %s: too many corrupt files", base)
		}
		aside = base + "-" + strconv.Itoa(i)
	}
	if err := os.Rename(name, aside); err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	for _, suffix := range []string{"-wal", "-journal"} {
		if err := os.Rename(name+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("history: %w", err)
		}
	}
	if err := os.Remove(name + "-shm"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("history: %w", err)
	}
	os.Remove(name + checkStampSuffix)
	return aside, nil
}

// openPostgres opens the PostgreSQL store dsn and migrates it.
func openPostgres(ctx context.Context, dsn string) (Store, error) {
	db, cfg, err := openPostgresDB(ctx, dsn, "history")
	if err != nil {
		return nil, err
	}
	s := &sqlStore{db: db, dialect: dialectPostgres}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history: PostgreSQL at %s: %w", serverOf(cfg), err)
	}
	return s, nil
}

// openPostgresDB opens the PostgreSQL database dsn and checks that it
// answers; its errors start with prefix.
func openPostgresDB(ctx context.Context, dsn, prefix string) (*sql.DB, *pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: PostgreSQL DSN: %w", prefix, err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = ConnectTimeout
	}
	db := stdlib.OpenDB(*cfg)
	// The bound covers every address the DSN lists and the TLS attempt
	// and plain retry of sslmode=prefer.
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	err = db.PingContext(pctx)
	cancel()
	if err != nil {
		db.Close()
		msg := fmt.Sprintf("%s: cannot reach PostgreSQL at %s (within %v): ", prefix, serverOf(cfg), cfg.ConnectTimeout)
		var pe *pgconn.PgError
		if errors.As(err, &pe) { // the server answered, and refused
			msg = fmt.Sprintf("%s: PostgreSQL at %s: ", prefix, serverOf(cfg))
		}
		return nil, nil, &connectError{msg: msg + connectCause(err), err: err}
	}
	return db, cfg, nil
}

// connectError is a failure to connect to PostgreSQL, with a message on
// one line.
type connectError struct {
	msg string
	err error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.err }

// connectCause is the text of pgx's connection error err on one line:
// without the ConnectError's preamble, each distinct failure of the
// attempts (every address, with and without TLS) once.
func connectCause(err error) string {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || errors.Unwrap(ce) == nil {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	inner := errors.Unwrap(ce)
	parts := []error{inner}
	if j, ok := inner.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	var msgs []string
	for _, p := range parts {
		if m := strings.Join(strings.Fields(p.Error()), " "); !slices.Contains(msgs, m) {
			msgs = append(msgs, m)
		}
	}
	return strings.Join(msgs, "; ")
}

// serverOf names the server (or servers) of cfg: host:port, or the
// socket of a Unix-domain one.
func serverOf(cfg *pgx.ConnConfig) string {
	name := func(host string, port uint16) string {
		if strings.HasPrefix(host, "/") {
			return filepath.Join(host, ".s.PGSQL."+strconv.Itoa(int(port)))
		}
		return net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	names := []string{name(cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks {
		if n := name(f.Host, f.Port); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}
