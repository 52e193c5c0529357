package pi_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// recordDTP is a DTP that keeps a copy of each upload's request.
type recordDTP struct {
	pi.DTP
	mu   sync.Mutex
	reqs []xfer.Request
}

func (d *recordDTP) Receive(ctx context.Context, req *xfer.Request, dst dsi.Writer, notify func(xfer.Event)) (int64, error) {
	d.mu.Lock()
	r := *req
	r.Restart = req.Restart.Clone()
	d.reqs = append(d.reqs, r)
	d.mu.Unlock()
	return d.DTP.Receive(ctx, req, dst, notify)
}

// TestModeEStoreCarriesRestart: a resumed MODE E STOR hands its REST
// ranges to the DTP, which a striped frontend needs to check the bytes
// moved against ALLO (docs/bench/chaos.md, defect 1); without them a
// resumed striped upload failed with 426 forever.
func TestModeEStoreCarriesRestart(t *testing.T) {
	cfg := config(seed(t))
	rec := &recordDTP{}
	newDTP := cfg.NewDTP
	cfg.NewDTP = func(c net.Conn) pi.DTP {
		rec.DTP = newDTP(c)
		return rec
	}
	c := dial(t, serve(t, cfg))
	c.login()
	c.expect("MODE E", 200)
	data := randomBytes(100000)
	if _, rest := c.modeEStore("STOR /r", data[:60000], 1, nil); rest[len(rest)-1].Code != 226 {
		t.Fatal(rest)
	}
	c.expect("ALLO 100000", 200)
	c.expect("REST 0-60000", 350)
	if _, rest := c.modeEStore("STOR /r", data, 2, []xfer.Range{{Start: 60000, End: 100000}}); rest[len(rest)-1].Code != 226 {
		t.Fatal(rest)
	}
	got, r := c.modeERetrieve("RETR /r", 2)
	if r.Code != 226 || string(got) != string(data) {
		t.Fatalf("RETR after the resumed STOR: %v, %d bytes", r, len(got))
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) != 2 {
		t.Fatalf("%d uploads recorded, want 2", len(rec.reqs))
	}
	if n := rec.reqs[0].Restart.Len(); n != 0 {
		t.Errorf("first STOR: Restart has %d ranges, want none", n)
	}
	if got := rec.reqs[1].Restart.Ranges(); len(got) != 1 || got[0] != (xfer.Range{Start: 0, End: 60000}) {
		t.Errorf("resumed STOR: Restart = %v, want [0-60000]", got)
	}
	if rec.reqs[1].Size != 100000 {
		t.Errorf("resumed STOR: Size = %d, want 100000", rec.reqs[1].Size)
	}
}

// TestModeEStoreShortOfALLO: a MODE E upload whose senders all end (EOD)
// before the bytes ALLO announced has arrived is not complete, since a
// stray that is not the client can end it so without DCAU: a 4xx or 5xx
// reply, and the file does not appear under its name.
func TestModeEStoreShortOfALLO(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	data := randomBytes(100000)
	c.expect("ALLO 100000", 200)
	_, rest := c.modeEStore("STOR /short", data, 2, []xfer.Range{{Start: 0, End: 50000}})
	if code := rest[len(rest)-1].Code; code/100 != 4 && code/100 != 5 {
		t.Fatalf("a MODE E upload of half of its ALLO answered %v", rest)
	}
	c.expect("SIZE /short", 550)
	c.expect("ALLO 100000", 200)
	if _, rest := c.modeEStore("STOR /short", data, 2, nil); rest[len(rest)-1].Code != 226 {
		t.Fatalf("the whole upload answered %v", rest)
	}
	c.expect("SIZE /short", 213)
}
