package wire

import (
	"strings"
	"testing"
	"time"
)

func TestParsePerfMarker(t *testing.T) {
	// GCT 13.24's layout, two spaces after "Timestamp:" included.
	gct := Reply{Code: 112, Lines: []string{"Perf Marker", "Timestamp:  1795289848.1", "Stripe Index: 0",
		"Stripe Bytes Transferred: 201326592", "Total Stripe Count: 1", "End."}}
	m, err := ParsePerfMarker(gct)
	if err != nil || m.Bytes != 201326592 || m.Stripe != 0 || m.Stripes != 1 || m.Time.UnixMilli() != 1795289848100 {
		t.Fatalf("GCT marker: %+v %v", m, err)
	}
	for _, bad := range []Reply{
		{Code: 111, Lines: []string{"Range Marker 0-5"}},
		{Code: 112, Lines: []string{"Perf Marker", "End."}},
		{Code: 112, Lines: []string{"Perf Marker", "Stripe Bytes Transferred: -1", "End."}},
		{Code: 112, Lines: []string{"Perf Marker", "Timestamp: x", "Stripe Bytes Transferred: 1", "End."}},
	} {
		if _, err := ParsePerfMarker(bad); err == nil {
			t.Errorf("%v parsed", bad)
		}
	}
	orig := PerfMarker{Time: time.UnixMilli(1795289848700), Stripe: 2, Bytes: 12345, Stripes: 3}
	if back, err := ParsePerfMarker(orig.Reply()); err != nil || back != orig {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

func TestRangeMarker(t *testing.T) {
	for in, want := range map[string]string{
		"Range Marker 0-1000003": "0-1000003",
		"Range Marker 0-5,10-20": "0-5,10-20",
		"range marker   7-9 ":    "7-9",
		"Range Marker":           "",
	} {
		got, err := RangeMarker(Reply{Code: 111, Lines: []string{in}})
		if err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	if _, err := RangeMarker(Reply{Code: 111, Lines: []string{"Restart Marker 5"}}); err == nil {
		t.Error("a foreign 111 parsed")
	}
}

func FuzzPerfMarker(f *testing.F) {
	f.Add("Perf Marker\nTimestamp:  1795289848.1\nStripe Index: 0\nStripe Bytes Transferred: 201326592\nTotal Stripe Count: 1\nEnd.")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := ParsePerfMarker(Reply{Code: 112, Lines: strings.Split(text, "\n")})
		if err != nil {
			return
		}
		// What parses must survive a round trip (to the tenth of a second).
		m.Time = time.UnixMilli(m.Time.UnixMilli() / 100 * 100)
		back, err := ParsePerfMarker(m.Reply())
		if err != nil || back != m {
			t.Fatalf("%+v -> %+v, %v", m, back, err)
		}
	})
}

func FuzzRangeMarker(f *testing.F) {
	f.Add("Range Marker 0-5,10-20")
	f.Fuzz(func(t *testing.T, line string) {
		RangeMarker(Reply{Code: 111, Lines: []string{line}}) // must not panic
	})
}
