package replica

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ferrygrid/ferry/internal/history"
	sqlitedriver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// State is what is known of a replica's contents.
type State string

// The states of a replica.
const (
	// Unverified: registered without its checksum having been compared
	// to the LFN's since (a replica added with a checksum taken then is
	// OK).
	Unverified State = "unverified"
	// OK: its size and checksum matched the LFN's when last verified.
	OK State = "ok"
	// Bad: its size or checksum differed from the LFN's.
	Bad State = "bad"
	// Missing: its server answered that the file does not exist.
	Missing State = "missing"
)

// ErrNotFound is matched by the error of an LFN (or replica) the
// catalogue does not hold.
var ErrNotFound = errors.New("not in the replica catalogue")

// ErrMismatch is matched by the error of Add for a replica whose size or
// checksum differs from the LFN's.
var ErrMismatch = errors.New("differs from the catalogue")

// ErrNewerSchema is matched by the error of Open for a catalogue that a
// newer Ferry has migrated past what this one knows.
var ErrNewerSchema = errors.New("replica catalogue schema is newer than this ferry")

// Entry is one logical file name and its replicas.
type Entry struct {
	LFN     string // the path, "/cms/run1/f.root"
	Size    int64
	Alg     string // the checksum algorithm, upper case ("MD5", "ADLER32")
	Sum     string // the checksum, lower-case hex
	Created time.Time
	// Replicas are in the order of their URLs.
	Replicas []Replica
}

// Replica is one copy of an LFN.
type Replica struct {
	URL string
	// Size and Sum are what was last measured of it (with the LFN's
	// algorithm).
	Size  int64
	Sum   string
	State State
	// Verified is when its checksum was last compared with the LFN's;
	// zero: never.
	Verified time.Time
	Added    time.Time
	// Note says why it is Bad or Missing ("" otherwise).
	Note string
}

// Catalogue is an open replica catalogue. It is safe for concurrent use,
// and several processes may use one database at once.
type Catalogue struct {
	db *history.DB
}

// busyTimeout is how long an SQLite statement waits for another
// connection's write lock (as the history's).
const busyTimeout = 30 * time.Second

//go:embed migrations
var migrationFS embed.FS

// schema is the catalogue's tables in the history's database, with
// their own version table and migration lock ("ferryrep" in ASCII).
var schema = history.Schema{Name: "replica", FS: migrationFS, Table: "replica_schema_version",
	Lock: 0x6665727279726570, ErrNewer: ErrNewerSchema}

// Open opens the catalogue in the database dsn names, as history.Open
// reads it: "" the default SQLite file (history.DefaultPath), a
// postgres:// or postgresql:// URL a PostgreSQL database, anything else
// an SQLite file. "off" is refused: the catalogue has no "off". The
// schema is created or migrated (history.OpenSchema).
func Open(ctx context.Context, dsn string) (*Catalogue, error) {
	if dsn == history.OffDSN {
		return nil, errors.New("replica: the catalogue lives in the history database, which is off (-history off or FERRY_HISTORY=off); name one with -history")
	}
	db, err := history.OpenSchema(ctx, dsn, schema)
	if err != nil {
		return nil, err
	}
	return &Catalogue{db: db}, nil
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

// Close closes the database.
func (c *Catalogue) Close() error { return c.db.Close() }

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// retryBusy runs f again while SQLite reports a lock it did not wait
// for (a deadlock it resolved by failing one side), for up to
// busyTimeout.
func (c *Catalogue) retryBusy(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		err := f()
		if err == nil || c.db.Postgres && !serialization(err) || !c.db.Postgres && !busy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(5+rand.IntN(20)) * time.Millisecond):
		}
	}
}

// serialization reports whether err is a PostgreSQL failure that a retry
// of the transaction cures (serialization failure, deadlock).
func serialization(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SQLSTATE 40001") || strings.Contains(s, "SQLSTATE 40P01")
}

// Add registers replica r of the LFN lfn (a path, see ParseLFN). A new
// LFN takes r's size and checksum (alg, r.Sum); an existing one must
// have the same (alg "" means the LFN's), or the error matches
// ErrMismatch and nothing changes. A replica already registered is
// updated. r.State "" means OK when r.Verified is set, else Unverified.
// Two writers adding replicas of one new LFN at once are safe: one
// creates it, the other is checked against it.
func (c *Catalogue) Add(ctx context.Context, lfn, alg string, r Replica) error {
	if err := checkPath(lfn); err != nil {
		return fmt.Errorf("replica: %s: %v", Format(lfn), err)
	}
	if r.URL == "" || r.Sum == "" {
		return fmt.Errorf("replica: %s: a replica needs a URL and a checksum", Format(lfn))
	}
	alg = strings.ToUpper(alg)
	if r.State == "" {
		r.State = Unverified
		if !r.Verified.IsZero() {
			r.State = OK
		}
	}
	now := time.Now()
	if r.Added.IsZero() {
		r.Added = now
	}
	return c.retryBusy(ctx, func() error {
		tx, err := c.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if alg != "" {
			if _, err := tx.ExecContext(ctx, c.db.Rebind(`INSERT INTO replica_lfns (lfn, size, cksum_alg, cksum, created_ns)
VALUES (?, ?, ?, ?, ?) ON CONFLICT (lfn) DO NOTHING`), lfn, r.Size, alg, strings.ToLower(r.Sum), nanos(now)); err != nil {
				return fmt.Errorf("replica: add %s: %w", Format(lfn), err)
			}
		}
		var size int64
		var eAlg, eSum string
		err = tx.QueryRowContext(ctx, c.db.Rebind("SELECT size, cksum_alg, cksum FROM replica_lfns WHERE lfn = ?"), lfn).Scan(&size, &eAlg, &eSum)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("replica: %s: %w", Format(lfn), ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("replica: add %s: %w", Format(lfn), err)
		}
		switch {
		case alg != "" && alg != eAlg:
			return fmt.Errorf("replica: %s has %s checksums, not %s: %w", Format(lfn), eAlg, alg, ErrMismatch)
		case r.Size != size:
			return fmt.Errorf("replica: %s: %s has %d bytes, the catalogue %d: %w", Format(lfn), r.URL, r.Size, size, ErrMismatch)
		case !strings.EqualFold(r.Sum, eSum):
			return fmt.Errorf("replica: %s: %s has %s %s, the catalogue %s: %w", Format(lfn), r.URL, eAlg, strings.ToLower(r.Sum), eSum, ErrMismatch)
		}
		if _, err := tx.ExecContext(ctx, c.db.Rebind(`INSERT INTO replicas (lfn, url, size, cksum, state, verified_ns, added_ns, note)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (lfn, url) DO UPDATE SET size = excluded.size, cksum = excluded.cksum, state = excluded.state,
	verified_ns = excluded.verified_ns, note = excluded.note`),
			lfn, r.URL, r.Size, strings.ToLower(r.Sum), string(r.State), nanos(r.Verified), nanos(r.Added), r.Note); err != nil {
			return fmt.Errorf("replica: add %s: %w", Format(lfn), err)
		}
		return tx.Commit()
	})
}

// Remove removes the replicas urls of lfn; with no urls, the LFN and
// all its replicas. An LFN left without replicas stays (its size and
// checksum are what a new replica must match) until removed itself. It
// returns an error matching ErrNotFound when the LFN, or one of urls, is
// not in the catalogue (and then removes nothing).
func (c *Catalogue) Remove(ctx context.Context, lfn string, urls ...string) error {
	return c.retryBusy(ctx, func() error {
		tx, err := c.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if len(urls) == 0 {
			if _, err := tx.ExecContext(ctx, c.db.Rebind("DELETE FROM replicas WHERE lfn = ?"), lfn); err != nil {
				return fmt.Errorf("replica: rm %s: %w", Format(lfn), err)
			}
			res, err := tx.ExecContext(ctx, c.db.Rebind("DELETE FROM replica_lfns WHERE lfn = ?"), lfn)
			if err != nil {
				return fmt.Errorf("replica: rm %s: %w", Format(lfn), err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("replica: %s: %w", Format(lfn), ErrNotFound)
			}
			return tx.Commit()
		}
		for _, u := range urls {
			res, err := tx.ExecContext(ctx, c.db.Rebind("DELETE FROM replicas WHERE lfn = ? AND url = ?"), lfn, u)
			if err != nil {
				return fmt.Errorf("replica: rm %s: %w", Format(lfn), err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("replica: %s has no replica %s: %w", Format(lfn), u, ErrNotFound)
			}
		}
		return tx.Commit()
	})
}

// Lookup returns the entry of lfn, with its replicas; an error matching
// ErrNotFound when there is none.
func (c *Catalogue) Lookup(ctx context.Context, lfn string) (Entry, error) {
	es, err := c.list(ctx, "lfn = ?", lfn)
	if err != nil {
		return Entry{}, err
	}
	if len(es) == 0 {
		return Entry{}, fmt.Errorf("replica: unknown LFN %s: %w", Format(lfn), ErrNotFound)
	}
	return es[0], nil
}

// List returns the entries at or below the LFN prefix ("/" for all), in
// the order of their names.
func (c *Catalogue) List(ctx context.Context, prefix string) ([]Entry, error) {
	if prefix == "/" || prefix == "" {
		return c.list(ctx, "1 = 1")
	}
	// A comparison of the leading characters, not LIKE: SQLite's LIKE
	// ignores ASCII case, and /Data would take in /data's files.
	below := prefix + "/"
	return c.list(ctx, `(lfn = ? OR substr(lfn, 1, ?) = ?)`, prefix, utf8.RuneCountInString(below), below)
}

func (c *Catalogue) list(ctx context.Context, where string, args ...any) ([]Entry, error) {
	rows, err := c.db.QueryContext(ctx, c.db.Rebind(`SELECT l.lfn, l.size, l.cksum_alg, l.cksum, l.created_ns,
	r.url, r.size, r.cksum, r.state, r.verified_ns, r.added_ns, r.note
FROM replica_lfns l LEFT JOIN replicas r ON r.lfn = l.lfn
WHERE `+strings.ReplaceAll(where, "lfn", "l.lfn")+`
ORDER BY l.lfn, r.url`), args...)
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var created int64
		var url, sum, state, note sql.NullString
		var size, verified, added sql.NullInt64
		if err := rows.Scan(&e.LFN, &e.Size, &e.Alg, &e.Sum, &created, &url, &size, &sum, &state, &verified, &added, &note); err != nil {
			return nil, fmt.Errorf("replica: %w", err)
		}
		e.Created = fromNanos(created)
		if len(out) == 0 || out[len(out)-1].LFN != e.LFN {
			out = append(out, e)
		}
		if url.Valid {
			last := &out[len(out)-1]
			last.Replicas = append(last.Replicas, Replica{URL: url.String, Size: size.Int64, Sum: sum.String,
				State: State(state.String), Verified: fromNanos(verified.Int64), Added: fromNanos(added.Int64), Note: note.String})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	return out, nil
}

// Mark records a verification of the replica url of lfn: its state,
// what was measured (size, sum; a negative size or "" sum keeps the old
// values), when, and a note on why (for Bad and Missing). An unknown
// replica is an error matching ErrNotFound.
func (c *Catalogue) Mark(ctx context.Context, lfn, url string, state State, size int64, sum string, at time.Time, note string) error {
	return c.retryBusy(ctx, func() error {
		res, err := c.db.ExecContext(ctx, c.db.Rebind(`UPDATE replicas SET state = ?, verified_ns = ?, note = ?,
	size = CASE WHEN ? < 0 THEN size ELSE ? END,
	cksum = CASE WHEN ? = '' THEN cksum ELSE ? END
WHERE lfn = ? AND url = ?`), string(state), nanos(at), note, size, size, sum, strings.ToLower(sum), lfn, url)
		if err != nil {
			return fmt.Errorf("replica: mark %s %s: %w", Format(lfn), url, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("replica: %s has no replica %s: %w", Format(lfn), url, ErrNotFound)
		}
		return nil
	})
}
