package history

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// The schema of each back-end is a numbered list of SQL files,
// migrations/DIALECT/NNNN_what.sql, applied in order; schema_version
// holds the numbers applied. A change of schema is a new file, never an
// edit of one that has shipped.
//
//go:embed migrations
var migrationFS embed.FS

// ErrNewerSchema is the error (wrapped) of Open for a database whose
// schema a newer version of Ferry has migrated past what this one knows.
var ErrNewerSchema = errors.New("database schema is newer than this ferry")

// migration is one numbered schema change.
type migration struct {
	version int
	name    string // the file's name, for errors
	sql     string
}

// migrations returns the schema changes of dir in fsys in order. Their
// numbers must run 1, 2, 3, ... without a gap.
func migrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var out []migration
	for _, e := range entries { // ReadDir sorts by name
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migrations: %s is not NNNN_name.sql", e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil || v != len(out)+1 {
			return nil, fmt.Errorf("migrations: %s: want number %d", e.Name(), len(out)+1)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("migrations: none in %s", dir)
	}
	return out, nil
}

// migrationLock is the PostgreSQL advisory lock key that serialises
// migrations of one database ("ferryhis" in ASCII).
const migrationLock = 0x6665727279686973

// Schema is a set of tables with numbered migrations of its own: the
// history's, or another package's kept in the history's database (the
// replica catalogue's), opened with OpenSchema.
type Schema struct {
	// Name prefixes the errors of OpenSchema ("replica").
	Name string
	// FS holds the migrations, migrations/sqlite/NNNN_what.sql and
	// migrations/postgres/NNNN_what.sql.
	FS fs.FS
	// Table is the table of the migrations applied.
	Table string
	// Lock is the PostgreSQL advisory lock key that serialises
	// migrations of the schema.
	Lock int64
	// ErrNewer is wrapped by the error of a database a newer Ferry has
	// migrated past the last migration of FS.
	ErrNewer error
}

// historySchema is the history's own.
var historySchema = Schema{Name: "history", FS: migrationFS, Table: "schema_version", Lock: migrationLock, ErrNewer: ErrNewerSchema}

// migrate brings the database's schema up to date (migrateSchema).
func (s *sqlStore) migrate(ctx context.Context) error {
	return migrateSchema(ctx, s.db, s.dialect, historySchema)
}

// migrateSchema brings sc up to date in db, in one transaction. Two
// processes migrating a fresh database at once do it one after the
// other: SQLite's BEGIN IMMEDIATE (the _txlock of the DSN) takes the
// write lock at once, PostgreSQL takes an advisory lock first.
func migrateSchema(ctx context.Context, db *sql.DB, d dialect, sc Schema) error {
	dir := "migrations/sqlite"
	if d == dialectPostgres {
		dir = "migrations/postgres"
	}
	ms, err := migrations(sc.FS, dir)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback() // after Commit, a no-op
	if d == dialectPostgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", sc.Lock); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
	}
	// The same SQL serves both dialects.
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+sc.Table+` (
	version    integer PRIMARY KEY,
	applied_at text NOT NULL DEFAULT CURRENT_TIMESTAMP
)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var cur int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(max(version), 0) FROM "+sc.Table).Scan(&cur); err != nil {
		return fmt.Errorf("migrate: schema version: %w", err)
	}
	latest := ms[len(ms)-1].version
	if cur > latest {
		return fmt.Errorf("%w (version %d; this one knows up to %d): use a newer ferry or another database",
			sc.ErrNewer, cur, latest)
	}
	if cur == latest {
		return nil // the deferred Rollback ends the transaction
	}
	for _, m := range ms[cur:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, rebind(d, "INSERT INTO "+sc.Table+" (version) VALUES (?)"), m.version); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
