package postgres

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStart(t *testing.T) {
	srv := Launch(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, dsn := range []string{srv.NewDatabase(t), srv.NewDatabase(t)} {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var user, db string
		if err := c.QueryRow(ctx, "SELECT current_user, current_database()").Scan(&user, &db); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: user %s, database %s", dsn, user, db)
		if user != User {
			t.Errorf("user %q, want %q", user, User)
		}
		if err := c.Close(ctx); err != nil {
			t.Error(err)
		}
	}
}

// TestBinDir: the newest version wins; none at all says to run make deps.
func TestBinDir(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9", "15", "13"} {
		dir := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "initdb"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := binDir(filepath.Join(root, "*", "bin", "initdb")); err != nil || got != filepath.Join(root, "15", "bin") {
		t.Errorf("binDir = %q, %v; want version 15", got, err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err := binDir(filepath.Join(t.TempDir(), "*", "bin", "initdb"))
	if err == nil || !strings.Contains(err.Error(), "run make deps") {
		t.Errorf("binDir without PostgreSQL: %v", err)
	}
}
