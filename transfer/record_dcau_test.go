package transfer

import "testing"

// TestRecordedDCAU: the history records the data channel authentication
// a copy really ran with. A third-party copy between a gsiftp:// server
// and an ftp:// one under Engine.PlainPeerNoDCAU runs with DCAU N on the
// gsiftp:// side (the ftp:// side has none), so it is recorded as N; the
// other copies keep the engine's DCAU.
func TestRecordedDCAU(t *testing.T) {
	gsi := Location{Kind: Remote, GSI: true, Addr: "g:2811", Path: "/a"}
	plain := Location{Kind: Remote, Addr: "p:21", Path: "/b"}
	ftps := Location{Kind: Remote, FTPS: true, Addr: "s:21", Path: "/c"}
	local := Location{Kind: Local, Path: "/tmp/x"}
	for _, tc := range []struct {
		name        string
		plainPeer   bool
		dcau, prot  string // the engine's
		src, dst    Location
		notpt       bool
		want, prot2 string
	}{
		{"gsi to plain", true, "", "", gsi, plain, false, "N", "C"},
		{"plain to gsi", true, "", "", plain, gsi, false, "N", "C"},
		{"gsi to plain, no PlainPeerNoDCAU", false, "", "", gsi, plain, false, "A", "C"},
		{"gsi to plain through the client", true, "", "", gsi, plain, true, "A", "C"},
		{"gsi to plain, -dcsafe", true, "", "S", gsi, plain, false, "A", "S"},
		{"gsi to plain, -nodcau", true, "N", "", gsi, plain, false, "N", "C"},
		{"gsi to gsi", true, "", "", gsi, gsi, false, "A", "C"},
		{"gsi to ftps", true, "", "", gsi, ftps, false, "A", "C"},
		{"gsi download", true, "", "", gsi, local, false, "A", "C"},
		{"plain download", true, "", "", plain, local, false, "", ""},
	} {
		e := &Engine{DCAU: tc.dcau, Prot: tc.prot, PlainPeerNoDCAU: tc.plainPeer}
		p := e.params(tc.src, tc.dst, Options{NoTPT: tc.notpt})
		if p.DCAU != tc.want || p.Prot != tc.prot2 {
			t.Errorf("%s: DCAU %q PROT %q, want %q %q", tc.name, p.DCAU, p.Prot, tc.want, tc.prot2)
		}
	}
}
