package history

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// DB is the history's database opened by OpenSchema for the tables of
// another package.
type DB struct {
	*sql.DB
	// Postgres is set for a PostgreSQL database, clear for SQLite.
	Postgres bool
}

// Rebind turns the ? placeholders of query into PostgreSQL's $1, $2, ...
// when d is a PostgreSQL database. query must have no ? in literals.
func (d *DB) Rebind(query string) string {
	if d.Postgres {
		return rebind(dialectPostgres, query)
	}
	return query
}

// OpenSchema opens the database dsn names, as Open reads it ("" the
// default SQLite file, a postgres:// or postgresql:// URL a PostgreSQL
// database, anything else an SQLite file; the caller refuses OffDSN),
// with the same settings (an SQLite statement waits for a lock,
// transactions take the write lock at once), and creates or migrates
// sc in it. Unlike Open it runs no integrity check and moves no corrupt
// file aside: that is for Open, of the history the file holds. Errors
// start with sc.Name.
func OpenSchema(ctx context.Context, dsn string, sc Schema) (*DB, error) {
	if isPostgres(dsn) {
		db, cfg, err := openPostgresDB(ctx, dsn, sc.Name)
		if err != nil {
			return nil, err
		}
		if err := migrateSchema(ctx, db, dialectPostgres, sc); err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: PostgreSQL at %s: %w", sc.Name, serverOf(cfg), err)
		}
		return &DB{DB: db, Postgres: true}, nil
	}
	name := dsn
	if name == "" {
		var err error
		if name, err = DefaultPath(); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
	}
	name, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sc.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", sc.Name, err)
	}
	return retryBusy(ctx, func() (*DB, error) {
		db, err := openSQLiteDB(ctx, name, sc.Name)
		if err != nil {
			return nil, err
		}
		if err := migrateSchema(ctx, db, dialectSQLite, sc); err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: %s: %w", sc.Name, name, err)
		}
		return &DB{DB: db}, nil
	})
}
