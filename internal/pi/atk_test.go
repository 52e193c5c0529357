package pi_test

// Reproductions of an outside review of the server's part files
// (docs/review/2026-11-27): F1, a part file of an ordinary upload that
// another identity continues, and F2, a ledger record that outlives its
// part file. The caps of the ledger (F3) are tested in parts_ledger_test.go.

import (
	"bytes"
	"testing"

	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// F1: a non-PART part file is writable by another identity via REST+STOR.
func TestAtkPlainRestWritesAnothersPartFile(t *testing.T) {
	cfg := config(seed(t))
	cfg.Uploads = &pi.Uploads{}
	addr := serve(t, cfg)
	a, b := dial(t, addr), dial(t, addr)
	a.loginAs("alice")
	b.loginAs("anonymous")
	mine := bytes.Repeat([]byte{'A'}, 1000)
	theirs := bytes.Repeat([]byte{'B'}, 1000)
	a.expect("ALLO 1000", 200)
	if r := final(a.modeEStore("STOR /g", mine, 1, []xfer.Range{{Start: 0, End: 500}})); r.Code != 426 && r.Code != 451 {
		t.Fatalf("alice's interrupted STOR: %v", r)
	}
	b.expect("REST 500-1000", 350)
	rb := final(b.modeEStore("STOR /g", theirs, 1, []xfer.Range{{Start: 0, End: 400}}))
	t.Logf("anonymous' STOR into alice's part file: %v", rb)
	a.expect("REST 0-500", 350)
	ra := final(a.modeEStore("STOR /g", mine, 1, []xfer.Range{{Start: 500, End: 1000}}))
	got, rr := a.modeERetrieve("RETR /g", 1)
	t.Logf("alice's resumption: %v; RETR %v: %d A, %d B", ra, rr, bytes.Count(got, []byte{'A'}), bytes.Count(got, []byte{'B'}))
	if ra.Code == 226 && rr.Code == 226 && !bytes.Equal(got, mine) {
		t.Errorf("alice's resumed upload completed (226) with %d bytes of another user's", bytes.Count(got, []byte{'B'}))
	}
}

// F2: a ledger record outlives DELE of its part file and locks the name for others.
func TestAtkLedgerSquat(t *testing.T) {
	cfg := config(seed(t))
	cfg.Uploads = &pi.Uploads{}
	addr := serve(t, cfg)
	a, b := dial(t, addr), dial(t, addr)
	a.loginAs("alice")
	b.loginAs("anonymous")
	junk := bytes.Repeat([]byte{'J'}, 2)
	if r := b.partUpload("STOR", "/a.txt", junk, "", xfer.Range{Start: 0, End: 1}, nil); r.Code != 226 {
		t.Fatalf("squatting part: %v", r)
	}
	b.expect("DELE "+xfer.PartName("/a.txt"), 250)
	data := bytes.Repeat([]byte{'A'}, 100)
	a.expect("ALLO 100", 200)
	if r := final(a.modeEStore("STOR /a.txt", data, 1, nil)); r.Code != 226 {
		t.Errorf("alice's whole STOR of /a.txt after anonymous deleted its part file: %d %q", r.Code, r.Text())
	}
	if r := b.partUpload("STOR", "/new", junk, "", xfer.Range{Start: 0, End: 1}, nil); r.Code != 226 {
		t.Fatalf("squatting /new: %v", r)
	}
	b.expect("DELE "+xfer.PartName("/new"), 250)
	a.expect("ALLO 100", 200)
	if r := final(a.modeEStore("STOR /new", data, 1, nil)); r.Code != 226 {
		t.Errorf("alice's STOR /new squatted by anonymous: %d %q", r.Code, r.Text())
	}
}
