package pi_test

import (
	"fmt"
	"testing"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// TestUploadInParts: a file uploaded as three MODE E STORs with PART
// (out of order, each with REST of the parts before) stays aside until
// the last part, is then renamed over the file it replaces byte for
// byte, and a part never lands outside its range.
func TestUploadInParts(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	old := randomBytes(1000)
	old[0] ^= 0xff // not the new content
	c.expect("ALLO 1000", 200)
	if _, rest := c.modeEStore("STOR /p", old, 1, nil); rest[len(rest)-1].Code != 226 {
		t.Fatal(rest)
	}
	data := randomBytes(300000)
	parts := []xfer.Range{{Start: 100000, End: 250000}, {Start: 0, End: 100000}, {Start: 250000, End: 300000}}
	var have xfer.RangeSet
	for i, p := range parts {
		c.expect("ALLO 300000", 200)
		if have.Len() > 0 {
			c.expect("REST "+have.String(), 350)
		}
		c.expect(fmt.Sprintf("PART %d-%d", p.Start, p.End), 350)
		_, rest := c.modeEStore("STOR /p", data, 2, []xfer.Range{p})
		if fin := rest[len(rest)-1]; fin.Code != 226 {
			t.Fatalf("part %d: %v", i, rest)
		}
		have.Add(p)
		if i < len(parts)-1 {
			// The old file is still there, whole, until the last part.
			if got, r := c.modeERetrieve("RETR /p", 1); r.Code != 226 || string(got) != string(old) {
				t.Fatalf("after part %d: RETR %v, %d bytes", i, r, len(got))
			}
		}
	}
	if got, r := c.modeERetrieve("RETR /p", 2); r.Code != 226 || string(got) != string(data) {
		t.Fatalf("RETR after the parts: %v, %d bytes (want %d)", r, len(got), len(data))
	}
	c.expect("SIZE "+xfer.PartName("/p"), 550)

	// A part whose blocks stray outside its range fails, and the file
	// is not touched.
	c.expect("ALLO 300000", 200)
	c.expect("PART 0-1000", 350)
	bad := randomBytes(300000)
	for i := range bad {
		bad[i] ^= 1
	}
	_, rest := c.modeEStore("STOR /p", bad, 1, []xfer.Range{{Start: 0, End: 2000}})
	if code := rest[len(rest)-1].Code; code/100 != 4 && code/100 != 5 {
		t.Fatalf("a part sending outside its range answered %v", rest)
	}
	if got, r := c.modeERetrieve("RETR /p", 1); r.Code != 226 || string(got) != string(data) {
		t.Fatalf("RETR after a bad part: %v, %d bytes", r, len(got))
	}

	// A part short of its range fails.
	c.expect("ALLO 300000", 200)
	c.expect("PART 0-100000", 350)
	_, rest = c.modeEStore("STOR /q", data, 1, []xfer.Range{{Start: 0, End: 50000}})
	if code := rest[len(rest)-1].Code; code/100 != 4 && code/100 != 5 {
		t.Fatalf("a short part answered %v", rest)
	}
	c.expect("SIZE /q", 550)
}

// TestResumedOverwriteContinuesPartFile: an upload replacing a file that
// was cut short keeps its bytes in the part file; the restarted STOR
// (REST of what arrived) continues that part file and renames it over
// the old file, instead of writing the rest into the old file (which
// would mix the two).
func TestResumedOverwriteContinuesPartFile(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	old := randomBytes(100000)
	for i := range old {
		old[i] ^= 0x5a // not the new content
	}
	c.expect("ALLO 100000", 200)
	if _, rest := c.modeEStore("STOR /x", old, 1, nil); rest[len(rest)-1].Code != 226 {
		t.Fatal(rest)
	}
	data := randomBytes(100000)
	c.expect("ALLO 100000", 200)
	_, rest := c.modeEStore("STOR /x", data, 1, []xfer.Range{{Start: 0, End: 50000}})
	if code := rest[len(rest)-1].Code; code/100 != 4 && code/100 != 5 {
		t.Fatalf("a cut-short upload answered %v", rest)
	}
	if got, r := c.modeERetrieve("RETR /x", 1); r.Code != 226 || string(got) != string(old) {
		t.Fatalf("the old file changed under a cut-short upload: %v", r)
	}
	c.expect("ALLO 100000", 200)
	c.expect("REST 0-50000", 350)
	if _, rest := c.modeEStore("STOR /x", data, 2, []xfer.Range{{Start: 50000, End: 100000}}); rest[len(rest)-1].Code != 226 {
		t.Fatal(rest)
	}
	if got, r := c.modeERetrieve("RETR /x", 1); r.Code != 226 || string(got) != string(data) {
		t.Fatalf("after the restarted upload: %v, the file is not the new one", r)
	}
	c.expect("SIZE "+xfer.PartName("/x"), 550)
}

// TestUploadInPartsESTO: parts sent as ESTO A <start> (MODE E offsets
// from 0 at the part's start, as a source's ERET sends them in a
// third-party copy) assemble the same way: aside until the last part,
// then the whole file in place.
func TestUploadInPartsESTO(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	c.expect("MODE E", 200)
	data := randomBytes(300000)
	parts := []xfer.Range{{Start: 250000, End: 300000}, {Start: 0, End: 120000}, {Start: 120000, End: 250000}}
	var have xfer.RangeSet
	for i, p := range parts {
		c.expect("ALLO 300000", 200)
		if have.Len() > 0 {
			c.expect("REST "+have.String(), 350)
		}
		c.expect(fmt.Sprintf("PART %d-%d", p.Start, p.End), 350)
		_, rest := c.modeEStore(fmt.Sprintf("ESTO A %d /e", p.Start), data[p.Start:p.End], 2, nil)
		if fin := rest[len(rest)-1]; fin.Code != 226 {
			t.Fatalf("part %d: %v", i, rest)
		}
		have.Add(p)
		if i < len(parts)-1 {
			c.expect("SIZE /e", 550)
		}
	}
	if got, r := c.modeERetrieve("RETR /e", 2); r.Code != 226 || string(got) != string(data) {
		t.Fatalf("RETR after the parts: %v, %d bytes (want %d)", r, len(got), len(data))
	}
	// A part that sends more than its length fails.
	c.expect("ALLO 300000", 200)
	c.expect("PART 0-1000", 350)
	_, rest := c.modeEStore("ESTO A 0 /f", data[:2000], 1, nil)
	if code := rest[len(rest)-1].Code; code/100 != 4 && code/100 != 5 {
		t.Fatalf("an ESTO part longer than its range answered %v", rest)
	}
}
