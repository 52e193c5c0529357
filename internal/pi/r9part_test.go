package pi_test

// Reproductions of the r9 security review of PART (docs/review/2026-11-27),
// and the ledger of uploads in parts that fixes them (parts.go).

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// final is the final reply of a modeEStore: the last of rest, or prelim
// when the command was refused before its data.
func final(prelim wire.Reply, rest []wire.Reply) wire.Reply {
	if len(rest) == 0 {
		return prelim
	}
	return rest[len(rest)-1]
}

// TestR9PartCompletesFromRangesNeverSent: docs/extensions.md promises
// "the server will not complete a file from ranges it does not hold",
// but a PART with REST only checked that a part file exists. One byte
// sent as a first part, then REST 0-999 + PART 999-1000 with one more
// byte, renamed a 1000-byte file of which 998 bytes never arrived over
// the target.
func TestR9PartCompletesFromRangesNeverSent(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	data := bytes.Repeat([]byte{'D'}, 1000)
	c.expect("ALLO 1000", 200)
	c.expect("PART 0-1", 350)
	if _, rest := c.modeEStore("STOR /f", data, 1, []xfer.Range{{Start: 0, End: 1}}); rest[len(rest)-1].Code != 226 {
		t.Fatalf("first part: %v", rest)
	}
	c.expect("ALLO 1000", 200)
	c.expect("REST 0-999", 350)
	c.expect("PART 999-1000", 350)
	fin := final(c.modeEStore("STOR /f", data, 1, []xfer.Range{{Start: 999, End: 1000}}))
	got, r := c.modeERetrieve("RETR /f", 1)
	if fin.Code == 226 && r.Code == 226 {
		zeros := bytes.Count(got, []byte{0})
		t.Errorf("PART with REST of ranges never stored completed /f (%d bytes, %d of them zeros never sent): %q", len(got), zeros, fin.Text())
	}
	if fin.Code != 550 {
		t.Errorf("PART with REST of ranges never stored: %d %q, want 550", fin.Code, fin.Text())
	}
}

// TestR9PartInjectionBetweenParts: between two parts of alice's upload
// (no upload in progress, so Uploads does not stop it), another user
// sends a PART of the same file. Without REST, PART truncated the part
// file: alice's first part was replaced by zeros, yet her next part
// (REST of what she sent + the last range) was accepted and completed the
// file, which she believes holds her bytes. With REST, the other user
// overwrote ranges alice already sent. uploads.go's stated aim is that
// "one client must not slip bytes into another's upload".
func TestR9PartInjectionBetweenParts(t *testing.T) {
	addr := serve(t, config(seed(t)))
	a := dial(t, addr)
	a.expect("USER alice", 331)
	a.expect("PASS secret", 230)
	a.expect("TYPE I", 200)
	a.expect("MODE E", 200)
	mine := bytes.Repeat([]byte{'A'}, 1000)
	a.expect("ALLO 1000", 200)
	a.expect("PART 0-500", 350)
	if _, rest := a.modeEStore("STOR /shared", mine, 1, []xfer.Range{{Start: 0, End: 500}}); rest[len(rest)-1].Code != 226 {
		t.Fatalf("alice part 1: %v", rest)
	}
	b := dial(t, addr)
	b.login() // anonymous
	b.expect("MODE E", 200)
	theirs := bytes.Repeat([]byte{'B'}, 1000)
	b.expect("ALLO 1000", 200)
	b.expect("REST 0-500", 350)
	b.expect("PART 0-500", 350)
	fin := final(b.modeEStore("STOR /shared", theirs, 1, []xfer.Range{{Start: 0, End: 500}}))
	t.Logf("the other user's PART: %v", fin)
	if fin.Class() == 2 {
		t.Errorf("the other user's PART into alice's upload was accepted: %v", fin)
	}
	a.expect("ALLO 1000", 200)
	a.expect("REST 0-500", 350)
	a.expect("PART 500-1000", 350)
	if _, rest := a.modeEStore("STOR /shared", mine, 1, []xfer.Range{{Start: 500, End: 1000}}); rest[len(rest)-1].Code != 226 {
		t.Fatalf("alice part 2: %v", rest)
	}
	got, r := a.modeERetrieve("RETR /shared", 1)
	if r.Code == 226 && !bytes.Equal(got, mine) {
		t.Errorf("alice's upload completed (226) but /shared holds %d bytes of another user's", bytes.Count(got, []byte{'B'}))
	}
}

// partUpload sends one part of an upload of size bytes to path: ALLO,
// REST (unless rest is ""), PART, then verb with blocks of data covering
// send (nil: the part), and returns the final reply.
func (c *ctl) partUpload(verb, path string, data []byte, rest string, part xfer.Range, send []xfer.Range) wire.Reply {
	c.t.Helper()
	c.expect(fmt.Sprintf("ALLO %d", len(data)), 200)
	if rest != "" {
		c.expect("REST "+rest, 350)
	}
	c.expect(fmt.Sprintf("PART %d-%d", part.Start, part.End), 350)
	if send == nil {
		send = []xfer.Range{part}
	}
	return final(c.modeEStore(verb+" "+path, data, 1, send))
}

// loginAs logs c in as alice or anonymous, in MODE E.
func (c *ctl) loginAs(user string) {
	c.t.Helper()
	if user == "alice" {
		c.expect("USER alice", 331)
		c.expect("PASS secret", 230)
		c.expect("TYPE I", 200)
	} else {
		c.login()
	}
	c.expect("MODE E", 200)
}

// TestPartLedger: an upload in parts completes only from bytes the
// server stored in its part file for the same identity: what an attacker
// (another user, a lying or replaying client) sends between or after the
// parts is refused with a clear reply, and the file is never completed
// with holes or another's bytes.
func TestPartLedger(t *testing.T) {
	const size = 1000
	mine := bytes.Repeat([]byte{'A'}, size)
	theirs := bytes.Repeat([]byte{'B'}, size)
	first := xfer.Range{Start: 0, End: 500}
	last := xfer.Range{Start: 500, End: size}
	tests := []struct {
		name string
		// shared: the server's sessions share Config.Uploads (as a
		// server.Server's do); otherwise each has its own ledger.
		shared bool
		// between runs after alice's first part (0-500) of /f, with
		// alice's session a and another session b; it returns b's
		// final reply (or the zero Reply), whose code must be want.
		between func(t *testing.T, a, b *ctl) wire.Reply
		want    int
		// wantLast is the code of alice's last part (REST 0-500, PART
		// 500-1000); on 226 /f must be exactly hers, else absent.
		wantLast int
	}{{
		name:   "another user's PART with REST",
		shared: true,
		between: func(t *testing.T, a, b *ctl) wire.Reply {
			return b.partUpload("STOR", "/f", theirs, "0-500", first, nil)
		},
		want: 450, wantLast: 226,
	}, {
		name:   "another user's PART with REST, no shared ledger",
		shared: false,
		between: func(t *testing.T, a, b *ctl) wire.Reply {
			return b.partUpload("STOR", "/f", theirs, "0-500", first, nil)
		},
		want: 550, wantLast: 226,
	}, {
		name:   "another user's first PART truncating the part file",
		shared: true,
		between: func(t *testing.T, a, b *ctl) wire.Reply {
			return b.partUpload("STOR", "/f", theirs, "", last, nil)
		},
		want: 450, wantLast: 226,
	}, {
		name:   "another user's first PART, no shared ledger: alice's part file changed",
		shared: false,
		between: func(t *testing.T, a, b *ctl) wire.Reply {
			return b.partUpload("STOR", "/f", theirs, "", last, nil)
		},
		want: 226, wantLast: 550,
	}, {
		name:   "another user's whole STOR of the file",
		shared: true,
		between: func(t *testing.T, a, b *ctl) wire.Reply {
			b.expect("ALLO 1000", 200)
			return final(b.modeEStore("STOR /f", theirs, 1, nil))
		},
		want: 450, wantLast: 226,
	}, {
		name:   "another user's ESTO part with REST",
		shared: true,
		between: func(t *testing.T, a, b *ctl) wire.Reply {
			return b.partUpload("ESTO A 0", "/f", theirs, "0-500", first, []xfer.Range{{Start: 0, End: 500}})
		},
		want: 450, wantLast: 226,
	}, {
		name:   "the part file deleted between the parts",
		shared: true,
		between: func(t *testing.T, a, b *ctl) wire.Reply {
			return b.do("DELE " + xfer.PartName("/f"))
		},
		want: 250, wantLast: 550,
	}, {
		name:   "the same user from another connection (a resumed upload)",
		shared: true,
		between: func(t *testing.T, a, b *ctl) wire.Reply {
			return wire.Reply{}
		},
		wantLast: 226,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(seed(t))
			if tt.shared {
				cfg.Uploads = &pi.Uploads{}
			}
			addr := serve(t, cfg)
			a, b := dial(t, addr), dial(t, addr)
			a.loginAs("alice")
			b.loginAs("anonymous")
			if r := a.partUpload("STOR", "/f", mine, "", first, nil); r.Code != 226 {
				t.Fatalf("alice's first part: %v", r)
			}
			if r := tt.between(t, a, b); r.Code != tt.want {
				t.Errorf("in between: %d %q, want %d", r.Code, r.Text(), tt.want)
			}
			if tt.name == "the same user from another connection (a resumed upload)" {
				a = dial(t, addr)
				a.loginAs("alice")
			}
			r := a.partUpload("STOR", "/f", mine, "0-500", last, nil)
			if r.Code != tt.wantLast {
				t.Errorf("alice's last part: %d %q, want %d", r.Code, r.Text(), tt.wantLast)
			}
			got, rr := a.modeERetrieve("RETR /f", 1)
			switch {
			case r.Code == 226 && (rr.Code != 226 || !bytes.Equal(got, mine)):
				t.Errorf("after alice's last part: RETR %v, %d bytes of another user's", rr, bytes.Count(got, []byte{'B'}))
			case r.Code != 226 && rr.Code == 226 && bytes.Count(got, []byte{'A'}) > 0:
				t.Errorf("alice's refused upload shows under its name: %d bytes", len(got))
			}
		})
	}
}

// TestPartLedgerOneClient: a single client's PART refused when it
// claims, replays or leaves out bytes; accepted when its parts overlap.
func TestPartLedgerOneClient(t *testing.T) {
	const size = 1000
	data := randomBytes(size)
	type step struct {
		verb, rest string
		part       xfer.Range
		send       []xfer.Range // nil: the part
		allo       int          // 0: size
		want       int
	}
	tests := []struct {
		name  string
		steps []step
		// whole: /f must then be data; otherwise it must not exist.
		whole bool
	}{{
		name: "REST of more than the part file holds",
		steps: []step{
			{part: xfer.Range{Start: 0, End: 10}, want: 226},
			{rest: "0-999", part: xfer.Range{Start: 999, End: 1000}, want: 550},
		},
	}, {
		name: "REST without a first part",
		steps: []step{
			{rest: "0-500", part: xfer.Range{Start: 500, End: 1000}, want: 550},
		},
	}, {
		name: "a part resending REST's bytes instead of its own",
		steps: []step{
			{part: xfer.Range{Start: 0, End: 500}, want: 226},
			// 500 bytes arrive, as many as are missing, but from
			// REST's range: 500-1000 never does.
			{rest: "0-500", part: xfer.Range{Start: 0, End: 1000}, send: []xfer.Range{{Start: 0, End: 500}}, want: 426},
		},
	}, {
		name: "ALLO differs from the first part's",
		steps: []step{
			{part: xfer.Range{Start: 0, End: 500}, want: 226},
			{rest: "0-500", part: xfer.Range{Start: 500, End: 900}, allo: 900, want: 554},
		},
	}, {
		name: "overlapping parts",
		steps: []step{
			{part: xfer.Range{Start: 0, End: 600}, want: 226},
			{rest: "0-600", part: xfer.Range{Start: 400, End: 1000}, want: 226},
		},
		whole: true,
	}, {
		name: "parts in any order",
		steps: []step{
			{part: xfer.Range{Start: 700, End: 1000}, want: 226},
			{rest: "700-1000", part: xfer.Range{Start: 0, End: 300}, want: 226},
			{rest: "0-300,700-1000", part: xfer.Range{Start: 300, End: 700}, want: 226},
		},
		whole: true,
	}, {
		name: "a failed part's bytes count, and only those",
		steps: []step{
			{part: xfer.Range{Start: 0, End: 500}, send: []xfer.Range{{Start: 0, End: 200}}, want: 426},
			{rest: "0-300", part: xfer.Range{Start: 300, End: 1000}, want: 550},
			{rest: "0-200", part: xfer.Range{Start: 200, End: 1000}, want: 226},
		},
		whole: true,
	}, {
		name: "a first part again starts afresh",
		steps: []step{
			{part: xfer.Range{Start: 0, End: 500}, want: 226},
			{part: xfer.Range{Start: 500, End: 1000}, want: 226},
			{rest: "0-500", part: xfer.Range{Start: 0, End: 500}, want: 550},
		},
	}, {
		name: "the path climbs above the root",
		steps: []step{
			{part: xfer.Range{Start: 0, End: 500}, want: 226},
			{rest: "0-500", part: xfer.Range{Start: 500, End: 1000}, want: 226},
		},
		whole: true, // as /f: ../../f is /f
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, serve(t, config(seed(t))))
			c.loginAs("anonymous")
			path := "/f"
			if strings.Contains(tt.name, "climbs") {
				path = "../../../f"
			}
			for i, st := range tt.steps {
				d := data
				if st.allo != 0 {
					d = data[:st.allo]
				}
				if r := c.partUpload("STOR", path, d, st.rest, st.part, st.send); r.Code != st.want {
					t.Fatalf("step %d: %d %q, want %d", i, r.Code, r.Text(), st.want)
				}
			}
			got, r := c.modeERetrieve("RETR /f", 1)
			switch {
			case tt.whole && (r.Code != 226 || !bytes.Equal(got, data)):
				t.Errorf("RETR /f: %v, %d bytes, want the file's %d", r, len(got), size)
			case !tt.whole && r.Code == 226:
				t.Errorf("/f exists (%d bytes, %d zeros) after refused parts", len(got), bytes.Count(got, []byte{0}))
			}
		})
	}
}

// TestPartLedgerReplay: a PART with REST replayed after the file was
// completed is refused, and the file stays as it was.
func TestPartLedgerReplay(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.loginAs("anonymous")
	data := randomBytes(1000)
	if r := c.partUpload("STOR", "/f", data, "", xfer.Range{Start: 0, End: 500}, nil); r.Code != 226 {
		t.Fatal(r)
	}
	if r := c.partUpload("STOR", "/f", data, "0-500", xfer.Range{Start: 500, End: 1000}, nil); r.Code != 226 {
		t.Fatal(r)
	}
	other := bytes.Repeat([]byte{'R'}, 1000)
	if r := c.partUpload("STOR", "/f", other, "0-500", xfer.Range{Start: 500, End: 1000}, nil); r.Code != 550 {
		t.Errorf("replayed last part: %v, want 550", r)
	}
	if got, r := c.modeERetrieve("RETR /f", 1); r.Code != 226 || !bytes.Equal(got, data) {
		t.Errorf("after the replay: RETR %v, the file changed", r)
	}
}
