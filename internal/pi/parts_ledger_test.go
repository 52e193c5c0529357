package pi

// The bounds of the ledger of part files (parts.go), F3 of the outside
// review of part files (docs/review/2026-11-27).

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

func ledgerRecord(owner string, i int, now time.Time) partRecord {
	return partRecord{keys: []string{fmt.Sprintf("p:/%s/%d", owner, i)}, owner: owner, touched: now.Add(time.Duration(i) * time.Millisecond)}
}

// TestPartLedgerOwnerShare: past its share an identity gives up its own
// records, unused longest first, never another's.
func TestPartLedgerOwnerShare(t *testing.T) {
	var l partLedger
	now := time.Now()
	if err := l.put(ledgerRecord("bob", 0, now)); err != nil {
		t.Fatal(err)
	}
	for i := range partLedgerOwnerMax + 10 {
		if err := l.put(ledgerRecord("eve", i, now)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if got := l.owners["eve"].n; got != partLedgerOwnerMax {
		t.Errorf("eve has %d records, want %d", got, partLedgerOwnerMax)
	}
	if _, ok := l.lookup([]string{"p:/bob/0"}, now); !ok {
		t.Error("bob's record was forgotten for eve's")
	}
	if _, ok := l.lookup([]string{"p:/eve/0"}, now); ok {
		t.Error("eve's oldest record was kept past her share")
	}
}

// TestPartLedgerFull: a full ledger refuses a newcomer (errPartFull)
// rather than forget another's live record; an identity with records of
// its own gives one up; expired records make room.
func TestPartLedgerFull(t *testing.T) {
	var l partLedger
	now := time.Now()
	for o := 0; l.n < partLedgerMax; o++ {
		owner := fmt.Sprintf("o%d", o)
		for i := range partLedgerOwnerMax {
			if err := l.put(ledgerRecord(owner, i, now)); err != nil {
				t.Fatalf("filling: %v", err)
			}
		}
	}
	n := l.n
	if err := l.admit("mallory", []string{"p:/new"}, now); !errors.Is(err, errPartFull) {
		t.Errorf("admit of a newcomer to a full ledger: %v, want errPartFull", err)
	}
	if err := l.admit("o0", []string{"p:/new"}, now); err != nil {
		t.Errorf("admit of an owner with records to a full ledger: %v", err)
	}
	if err := l.admit("mallory", []string{"p:/o1/3"}, now); err != nil {
		t.Errorf("admit of an upload replacing a record: %v", err)
	}
	if err := l.put(ledgerRecord("o0", partLedgerOwnerMax, now.Add(time.Hour))); err != nil {
		t.Fatalf("owner's put to a full ledger: %v", err)
	}
	if l.n != n || l.owners["o0"].n != partLedgerOwnerMax {
		t.Errorf("after o0's put: %d records, o0 %d; want %d, %d", l.n, l.owners["o0"].n, n, partLedgerOwnerMax)
	}
	later := now.Add(partLedgerTTL + 2*time.Hour)
	if err := l.admit("mallory", []string{"p:/new"}, later); err != nil {
		t.Errorf("admit once the records expired: %v", err)
	}
}

// TestPartLedgerBytes: the ledger's memory is bounded: a record's cost
// counts its ranges, and one identity's records stay within its share.
func TestPartLedgerBytes(t *testing.T) {
	var l partLedger
	now := time.Now()
	for i := range 200 {
		r := ledgerRecord("eve", i, now)
		r.parts = true
		for j := range partMaxRanges {
			r.held.Add(xfer.Range{Start: int64(2 * j), End: int64(2*j + 1)})
		}
		if err := l.put(r); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if l.owners["eve"].bytes > partLedgerOwnerBytes || l.bytes > partLedgerOwnerBytes {
		t.Errorf("eve's records take %d bytes, the ledger %d; her share is %d", l.owners["eve"].bytes, l.bytes, partLedgerOwnerBytes)
	}
	if l.owners["eve"].n >= 200 {
		t.Errorf("eve kept all %d records of %d ranges", l.owners["eve"].n, partMaxRanges)
	}
}

// TestPartWriterRanges: a transfer that scatters a part into more than
// partMaxRanges separate ranges fails; adjacent writes merge.
func TestPartWriterRanges(t *testing.T) {
	w, pw := limitToPart(nopWriter{}, xfer.Range{Start: 0, End: 1 << 30})
	for i := range 4 * partMaxRanges {
		if _, err := w.WriteAt([]byte{1}, int64(i)); err != nil {
			t.Fatalf("adjacent write %d: %v", i, err)
		}
	}
	if pw.written().Len() != 1 {
		t.Fatalf("adjacent writes left %d ranges", pw.written().Len())
	}
	var err error
	for i := 1; i <= partMaxRanges+1 && err == nil; i++ {
		_, err = w.WriteAt([]byte{1}, int64(4*partMaxRanges+2*i))
	}
	if !errors.Is(err, errPartRanges) {
		t.Errorf("scattered writes: %v, want errPartRanges", err)
	}
}

type nopWriter struct{}

func (nopWriter) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (nopWriter) Close() error                           { return nil }

// TestAnonymousOwner: anonymous clients are one identity per IPv4
// address and per IPv6 /64.
func TestAnonymousOwner(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
	} {
		if x, y := anonymousOwner(netip.MustParseAddr(c.a)), anonymousOwner(netip.MustParseAddr(c.b)); x != y {
			t.Errorf("%s is %q, %s is %q", c.a, x, c.b, y)
		}
	}
	if x, y := anonymousOwner(netip.MustParseAddr("2001:db8:1:2::1")), anonymousOwner(netip.MustParseAddr("2001:db8:1:3::1")); x == y {
		t.Errorf("two /64s are one owner %q", x)
	}
}
