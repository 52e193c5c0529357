package web

// A lease belongs to one claim (found by the outside review of 2026-11-27).

import (
	"context"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/postgres"
)

// TestLeaseReclaimedBySameInstance: a lease names only the instance,
// not the claim. When an instance's heartbeat stalls past the lease
// (a slow database), expire queues the job again and the same instance
// may claim it a second time: the first run's heartbeat still matches
// (claimed_by = this instance, state running), so it never learns it
// lost the job, and two runs copy the same files at once (and both
// write the result).
func TestLeaseReclaimedBySameInstance(t *testing.T) {
	pg := postgres.Launch(t)
	dsn := pg.NewDatabase(t)
	ctx := context.Background()
	st, err := openSite(ctx, SiteConfig{DSN: dsn, Instance: "A", Lease: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if _, err := st.db.ExecContext(ctx, "INSERT INTO web_jobs (id, owner, state, request, doc) VALUES ('j1', 'alice', 'queued', '{}', '{}')"); err != nil {
		t.Fatal(err)
	}
	first, err := st.claim(ctx, 10)
	if err != nil || first == nil {
		t.Fatalf("claim: %v %v", first, err)
	}
	time.Sleep(500 * time.Millisecond) // the first run's heartbeat is late
	if err := st.expire(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := st.claim(ctx, 10)
	if err != nil || second == nil {
		t.Fatalf("second claim: %v %v", second, err)
	}
	// The first run's next heartbeat must tell it that it lost the job.
	if _, err := st.heartbeat(ctx, first.id, first.attempts, []byte(`{}`)); err == nil {
		t.Errorf("job %s claimed twice by instance A (attempts %d then %d): the first run's heartbeat still succeeds, so both runs go on", first.id, first.attempts, second.attempts)
	}
	if _, err := st.heartbeat(ctx, second.id, second.attempts, []byte(`{}`)); err != nil {
		t.Errorf("the second run's heartbeat: %v", err)
	}
}
