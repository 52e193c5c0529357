package wire

import (
	"net/netip"
	"reflect"
	"testing"
)

var ap = netip.MustParseAddrPort

func TestParsePORT(t *testing.T) {
	tests := []struct {
		in   string
		want netip.AddrPort
		ok   bool
	}{
		{"127,0,0,1,204,21", ap("127.0.0.1:52245"), true},
		{"127,0,0,1,169,91", ap("127.0.0.1:43355"), true},
		{" 10, 1 ,2,3 ,0,  21 ", ap("10.1.2.3:21"), true},
		{"255,255,255,255,255,255", ap("255.255.255.255:65535"), true},
		{"0,0,0,0,0,0", ap("0.0.0.0:0"), true},
		{"010,0,0,1,0,1", ap("10.0.0.1:1"), true},
		{"127,0,0,1,204", netip.AddrPort{}, false},
		{"127,0,0,1,204,21,1", netip.AddrPort{}, false},
		{"256,0,0,1,1,1", netip.AddrPort{}, false},
		{"1,2,3,4,5,0256", netip.AddrPort{}, false},
		{"-1,2,3,4,5,6", netip.AddrPort{}, false},
		{"1,2,3,4,5,+6", netip.AddrPort{}, false},
		{"1,2,,4,5,6", netip.AddrPort{}, false},
		{"1,2,3,4,5,6\t", netip.AddrPort{}, false},
		{"", netip.AddrPort{}, false},
	}
	for _, tt := range tests {
		got, err := ParsePORT(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParsePORT(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestFormatPORT(t *testing.T) {
	tests := []struct {
		in   netip.AddrPort
		want string
		ok   bool
	}{
		{ap("127.0.0.1:52245"), "127,0,0,1,204,21", true},
		{ap("[::ffff:10.0.0.1]:21"), "10,0,0,1,0,21", true},
		{ap("[::1]:21"), "", false},
		{netip.AddrPort{}, "", false},
	}
	for _, tt := range tests {
		got, err := FormatPORT(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("FormatPORT(%v) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseEPRT(t *testing.T) {
	tests := []struct {
		in   string
		want netip.AddrPort
		ok   bool
	}{
		{"|1|127.0.0.1|37469|", ap("127.0.0.1:37469"), true},
		{" |1|127.0.0.1|37469| ", ap("127.0.0.1:37469"), true},
		{"|2|::1|2811|", ap("[::1]:2811"), true},
		{"!2!fe80::1!2811!", ap("[fe80::1]:2811"), true},
		{"|2|::ffff:1.2.3.4|1|", ap("[::ffff:1.2.3.4]:1"), true},
		{"|1|::1|2811|", netip.AddrPort{}, false},
		{"|2|127.0.0.1|2811|", netip.AddrPort{}, false},
		{"|2|fe80::1%eth0|2811|", netip.AddrPort{}, false},
		{"|3|127.0.0.1|2811|", netip.AddrPort{}, false},
		{"|1|127.0.0.1|65536|", netip.AddrPort{}, false},
		{"|1|127.0.0.1|-1|", netip.AddrPort{}, false},
		{"|1|127.0.0.1|2811", netip.AddrPort{}, false},
		{"|1|127.0.0.1|2811|x", netip.AddrPort{}, false},
		{"|||2811|", netip.AddrPort{}, false},
		{"\x7f1\x7f127.0.0.1\x7f1\x7f", netip.AddrPort{}, false},
		{" 1 127.0.0.1 1 ", netip.AddrPort{}, false},
		{"junk", netip.AddrPort{}, false},
		{"", netip.AddrPort{}, false},
	}
	for _, tt := range tests {
		got, err := ParseEPRT(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseEPRT(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestFormatEPRT(t *testing.T) {
	tests := []struct {
		in   netip.AddrPort
		want string
	}{
		{ap("127.0.0.1:2811"), "|1|127.0.0.1|2811|"},
		{ap("[::1]:2811"), "|2|::1|2811|"},
		{ap("[::ffff:127.0.0.1]:2811"), "|1|127.0.0.1|2811|"},
		{ap("[fe80::1%eth0]:2811"), "|2|fe80::1|2811|"},
		{netip.AddrPortFrom(netip.Addr{}, 56331), "|||56331|"},
	}
	for _, tt := range tests {
		if got := FormatEPRT(tt.in); got != tt.want {
			t.Errorf("FormatEPRT(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParsePASVReply(t *testing.T) {
	tests := []struct {
		in   string
		want netip.AddrPort
		ok   bool
	}{
		{"Entering Passive Mode (127,0,0,1,204,21)", ap("127.0.0.1:52245"), true},
		{"227 Entering Passive Mode (127,0,0,1,204,21)", ap("127.0.0.1:52245"), true},
		{"Entering Passive Mode 10,0,0,2,4,1.", ap("10.0.0.2:1025"), true},
		{"=10, 0, 0, 2, 4, 1", ap("10.0.0.2:1025"), true},
		{"Entering Passive Mode (1270,0,0,1,204,21) (1,2,3,4,0,5)", ap("1.2.3.4:5"), true},
		{"(300,0,0,1,1,1)", netip.AddrPort{}, false},
		{"Entering Passive Mode (127,0,0,1,204)", netip.AddrPort{}, false},
		{"Passive delayed.", netip.AddrPort{}, false},
		{"", netip.AddrPort{}, false},
	}
	for _, tt := range tests {
		got, err := ParsePASVReply(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParsePASVReply(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseEPSVReply(t *testing.T) {
	tests := []struct {
		in   string
		want netip.AddrPort
		ok   bool
	}{
		{"Entering Extended Passive Mode (|||56331|)", netip.AddrPortFrom(netip.Addr{}, 56331), true},
		{"Entering Extended Passive Mode (|1|127.0.0.1|56331|)", ap("127.0.0.1:56331"), true},
		{"Entering Extended Passive Mode (|2|::1|56331|)", ap("[::1]:56331"), true},
		{"x (junk) (!!!7!)", netip.AddrPortFrom(netip.Addr{}, 7), true},
		{"EPSV ALL Successful.", netip.AddrPort{}, false},
		{"Entering Extended Passive Mode (|||56331|", netip.AddrPort{}, false},
		{"(|||70000|)", netip.AddrPort{}, false},
		{"(|1||5|)", netip.AddrPort{}, false},
		{"", netip.AddrPort{}, false},
	}
	for _, tt := range tests {
		got, err := ParseEPSVReply(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseEPSVReply(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseHostPort(t *testing.T) {
	tests := []struct {
		in   string
		want netip.AddrPort
		ok   bool
	}{
		{" 127,0,0,1,169,91", ap("127.0.0.1:43355"), true},
		{" |1|127.0.0.1|37469|", ap("127.0.0.1:37469"), true},
		{"|2|::1|5| ", ap("[::1]:5"), true},
		{"", netip.AddrPort{}, false},
		{"   ", netip.AddrPort{}, false},
		{"127.0.0.1:5", netip.AddrPort{}, false},
	}
	for _, tt := range tests {
		got, err := ParseHostPort(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseHostPort(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseHostPorts(t *testing.T) {
	got, err := ParseHostPorts("127,0,0,1,169,91  |1|127.0.0.1|37469| |2|::1|5| ")
	want := []netip.AddrPort{ap("127.0.0.1:43355"), ap("127.0.0.1:37469"), ap("[::1]:5")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseHostPorts = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "  ", "127,0,0,1,1,1 junk", "1,2,3,4,5"} {
		if got, err := ParseHostPorts(bad); err == nil {
			t.Errorf("ParseHostPorts(%q) = %v, want error", bad, got)
		}
	}
}

func TestHostPortRoundTrip(t *testing.T) {
	for _, a := range []netip.AddrPort{ap("127.0.0.1:2811"), ap("0.0.0.0:0"), ap("255.255.255.255:65535"), ap("10.20.30.40:256")} {
		s, err := FormatPORT(a)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ParsePORT(s); got != a || err != nil {
			t.Errorf("PORT round trip %v -> %q -> %v, %v", a, s, got, err)
		}
		if got, err := ParsePASVReply("Entering Passive Mode (" + s + ")"); got != a || err != nil {
			t.Errorf("PASV round trip %v -> %q -> %v, %v", a, s, got, err)
		}
	}
	for _, a := range []netip.AddrPort{ap("127.0.0.1:2811"), ap("[::1]:1"), ap("[2001:db8::1]:65535")} {
		s := FormatEPRT(a)
		if got, err := ParseEPRT(s); got != a || err != nil {
			t.Errorf("EPRT round trip %v -> %q -> %v, %v", a, s, got, err)
		}
		if got, err := ParseEPSVReply("Entering Extended Passive Mode (" + s + ")"); got != a || err != nil {
			t.Errorf("EPSV round trip %v -> %q -> %v, %v", a, s, got, err)
		}
		if got, err := ParseHostPort(" " + s); got != a || err != nil {
			t.Errorf("host-port round trip %v -> %q -> %v, %v", a, s, got, err)
		}
	}
}

// TestHostPortTruncation checks that every strict prefix of a valid input
// fails or parses to a different address, and never panics.
func TestHostPortTruncation(t *testing.T) {
	parsers := map[string]func(string) (netip.AddrPort, error){
		"PORT": ParsePORT, "EPRT": ParseEPRT, "HostPort": ParseHostPort,
		"PASV": ParsePASVReply, "EPSV": ParseEPSVReply,
	}
	inputs := map[string][]string{
		"PORT":     {"127,0,0,1,204,21", "10,1,2,3,0,21"},
		"EPRT":     {"|1|127.0.0.1|37469|", "|2|::1|2811|"},
		"HostPort": {" |1|127.0.0.1|37469|", "127,0,0,1,169,91"},
		"PASV":     {"Entering Passive Mode 127,0,0,1,204,21", "(10,0,0,1,0,21"},
		"EPSV":     {"Entering Extended Passive Mode (|||56331|)", "(|1|127.0.0.1|56331|)"},
	}
	for name, ins := range inputs {
		p := parsers[name]
		for _, in := range ins {
			full, err := p(in)
			if err != nil {
				t.Fatalf("%s(%q): %v", name, in, err)
			}
			for i := 0; i < len(in); i++ {
				if got, err := p(in[:i]); err == nil && got == full {
					t.Errorf("%s(%q) (prefix) = %v, same as full input", name, in[:i], got)
				}
			}
		}
	}
}

func FuzzParsePORT(f *testing.F) {
	f.Add("127,0,0,1,204,21")
	f.Add(" 1, 2,3,4,5 ,6")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParsePORT(s)
		if err != nil {
			return
		}
		out, err := FormatPORT(a)
		if err != nil {
			t.Fatalf("FormatPORT(%v): %v", a, err)
		}
		if b, err := ParsePORT(out); b != a || err != nil {
			t.Fatalf("round trip %q -> %v -> %q -> %v, %v", s, a, out, b, err)
		}
	})
}

func FuzzParseEPRT(f *testing.F) {
	f.Add("|1|127.0.0.1|37469|")
	f.Add("|2|::1|2811|")
	f.Add("#2#::ffff:1.2.3.4#1#")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseEPRT(s)
		if err != nil {
			return
		}
		if !a.Addr().IsValid() || a.Addr().Zone() != "" {
			t.Fatalf("ParseEPRT(%q) = %v", s, a)
		}
		out := FormatEPRT(a)
		b, err := ParseEPRT(out)
		if err != nil || b.Port() != a.Port() || b.Addr() != a.Addr().Unmap() {
			t.Fatalf("round trip %q -> %v -> %q -> %v, %v", s, a, out, b, err)
		}
	})
}

func FuzzParseHostPort(f *testing.F) {
	f.Add(" |1|127.0.0.1|37469|")
	f.Add("127,0,0,1,169,91 ")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseHostPort(s)
		if err != nil {
			return
		}
		if got, err := ParseHostPort(FormatEPRT(a)); err != nil || got.Port() != a.Port() {
			t.Fatalf("re-parse of %v: %v, %v", a, got, err)
		}
		list, err := ParseHostPorts(s)
		if err == nil && (len(list) != 1 || list[0] != a) {
			t.Fatalf("ParseHostPorts(%q) = %v, ParseHostPort = %v", s, list, a)
		}
	})
}

func FuzzParsePASVReply(f *testing.F) {
	f.Add("Entering Passive Mode (127,0,0,1,204,21)")
	f.Add("1,2,3,4,5")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParsePASVReply(s)
		if err != nil {
			return
		}
		out, err := FormatPORT(a)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := ParsePASVReply("(" + out + ")"); b != a || err != nil {
			t.Fatalf("round trip %v -> %q -> %v, %v", a, out, b, err)
		}
	})
}

func FuzzParseEPSVReply(f *testing.F) {
	f.Add("Entering Extended Passive Mode (|||56331|)")
	f.Add("(|2|::1|1|)")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseEPSVReply(s)
		if err != nil {
			return
		}
		b, err := ParseEPSVReply("(" + FormatEPRT(a) + ")")
		if err != nil || b.Port() != a.Port() || b.Addr() != a.Addr().Unmap().WithZone("") {
			t.Fatalf("round trip %v -> %v, %v", a, b, err)
		}
	})
}
