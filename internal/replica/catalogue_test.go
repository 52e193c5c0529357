package replica

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/history"
	"github.com/ferrygrid/ferry/internal/testutil/postgres"
)

func TestCatalogueSQLite(t *testing.T) {
	runCatalogueTests(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "history.db") })
}

func TestCataloguePostgres(t *testing.T) {
	srv := postgres.Launch(t)
	runCatalogueTests(t, func(t *testing.T) string { return srv.NewDatabase(t) })
}

// runCatalogueTests runs the catalogue's tests on the databases newDSN
// makes (a new, empty one per call).
func runCatalogueTests(t *testing.T, newDSN func(t *testing.T) string) {
	open := func(t *testing.T, dsn string) *Catalogue {
		t.Helper()
		c, err := Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	t.Run("AddLookupRemove", func(t *testing.T) {
		c := open(t, newDSN(t))
		ctx := t.Context()
		if _, err := c.Lookup(ctx, "/cms/f"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Lookup of nothing: %v", err)
		}
		at := time.Unix(1700000000, 123).UTC()
		if err := c.Add(ctx, "/cms/f", "md5", Replica{URL: "ftp://a/f", Size: 10, Sum: "ABC", Verified: at}); err != nil {
			t.Fatal(err)
		}
		if err := c.Add(ctx, "/cms/f", "", Replica{URL: "ftp://b/f", Size: 10, Sum: "abc"}); err != nil {
			t.Fatal(err)
		}
		// Wrong size, checksum or algorithm: refused.
		for _, r := range []struct {
			alg string
			r   Replica
		}{
			{"MD5", Replica{URL: "ftp://c/f", Size: 11, Sum: "abc"}},
			{"MD5", Replica{URL: "ftp://c/f", Size: 10, Sum: "abd"}},
			{"ADLER32", Replica{URL: "ftp://c/f", Size: 10, Sum: "abc"}},
		} {
			if err := c.Add(ctx, "/cms/f", r.alg, r.r); !errors.Is(err, ErrMismatch) {
				t.Errorf("Add %+v: %v, want a mismatch", r, err)
			}
		}
		e, err := c.Lookup(ctx, "/cms/f")
		if err != nil {
			t.Fatal(err)
		}
		if e.Size != 10 || e.Alg != "MD5" || e.Sum != "abc" || len(e.Replicas) != 2 {
			t.Fatalf("entry %+v", e)
		}
		a, b := e.Replicas[0], e.Replicas[1]
		if a.URL != "ftp://a/f" || a.State != OK || !a.Verified.Equal(at) || b.State != Unverified || !b.Verified.IsZero() {
			t.Errorf("replicas %+v", e.Replicas)
		}
		if err := c.Mark(ctx, "/cms/f", "ftp://b/f", Bad, 10, "ffff", at, "checksum differs"); err != nil {
			t.Fatal(err)
		}
		if err := c.Mark(ctx, "/cms/f", "ftp://nonesuch/f", Bad, -1, "", at, ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("Mark of an unknown replica: %v", err)
		}
		e, _ = c.Lookup(ctx, "/cms/f")
		if b := e.Replicas[1]; b.State != Bad || b.Sum != "ffff" || b.Note != "checksum differs" {
			t.Errorf("marked %+v", b)
		}
		if err := c.Add(ctx, "/cms/sub/g", "ADLER32", Replica{URL: "ftp://a/g", Size: 1, Sum: "01"}); err != nil {
			t.Fatal(err)
		}
		if err := c.Add(ctx, "/cmsx", "ADLER32", Replica{URL: "ftp://a/x", Size: 1, Sum: "01"}); err != nil {
			t.Fatal(err)
		}
		for prefix, want := range map[string]int{"/": 3, "/cms": 2, "/cms/sub": 1, "/cms/sub/g": 1, "/cm": 0} {
			es, err := c.List(ctx, prefix)
			if err != nil || len(es) != want {
				t.Errorf("List(%q) = %d entries, %v; want %d", prefix, len(es), err, want)
			}
		}
		if err := c.Remove(ctx, "/cms/f", "ftp://b/f", "ftp://nonesuch/f"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Remove of an unknown replica: %v", err)
		}
		if e, _ := c.Lookup(ctx, "/cms/f"); len(e.Replicas) != 2 {
			t.Errorf("a failed Remove removed something: %+v", e)
		}
		if err := c.Remove(ctx, "/cms/f", "ftp://b/f"); err != nil {
			t.Fatal(err)
		}
		if err := c.Remove(ctx, "/cms/f"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Lookup(ctx, "/cms/f"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup after Remove: %v", err)
		}
		if err := c.Remove(ctx, "/cms/f"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second Remove: %v", err)
		}
	})

	t.Run("BesideHistory", func(t *testing.T) {
		dsn := newDSN(t)
		h, err := history.Open(t.Context(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		c := open(t, dsn)
		if err := c.Add(t.Context(), "/f", "MD5", Replica{URL: "ftp://a/f", Size: 1, Sum: "00"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Add(t.Context(), &history.Record{Start: time.Now(), End: time.Now(), Outcome: history.OK}); err != nil {
			t.Fatalf("history beside the catalogue: %v", err)
		}
		c2 := open(t, dsn) // migrated already: opens as is
		if _, err := c2.Lookup(t.Context(), "/f"); err != nil {
			t.Fatal(err)
		}
	})

	// Concurrent writers, each with its own connection pool, add
	// replicas of the same new LFNs at once: every replica lands, each
	// LFN once; a writer with a different checksum is refused.
	t.Run("ConcurrentWriters", func(t *testing.T) {
		dsn := newDSN(t)
		const writers, files = 6, 15
		var wg sync.WaitGroup
		errs := make(chan error, writers*files)
		for w := range writers {
			c := open(t, dsn)
			wg.Go(func() {
				for i := range files {
					lfn := fmt.Sprintf("/run/f%02d", i)
					r := Replica{URL: fmt.Sprintf("ftp://site%d/f%02d", w, i), Size: int64(i), Sum: fmt.Sprintf("%08x", i)}
					if err := c.Add(t.Context(), lfn, "ADLER32", r); err != nil {
						errs <- fmt.Errorf("writer %d: %w", w, err)
					}
					if i%5 == 0 {
						if err := c.Mark(t.Context(), lfn, r.URL, OK, -1, "", time.Now(), ""); err != nil {
							errs <- fmt.Errorf("writer %d: %w", w, err)
						}
					}
				}
				bad := Replica{URL: fmt.Sprintf("ftp://liar%d/f00", w), Size: 0, Sum: "deadbeef"}
				if err := c.Add(t.Context(), "/run/f00", "ADLER32", bad); !errors.Is(err, ErrMismatch) {
					errs <- fmt.Errorf("writer %d: a wrong checksum: %v", w, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		es, err := open(t, dsn).List(t.Context(), "/run")
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != files {
			t.Fatalf("%d LFNs, want %d", len(es), files)
		}
		for _, e := range es {
			if len(e.Replicas) != writers {
				t.Errorf("%s: %d replicas, want %d", e.LFN, len(e.Replicas), writers)
			}
		}
	})

	t.Run("Off", func(t *testing.T) {
		if _, err := Open(t.Context(), "off"); err == nil {
			t.Error("Open(off) succeeded")
		}
	})
}
