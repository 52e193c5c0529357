package transfer

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

func sampleState() ResumeState {
	var rs client.RangeSet
	rs.Add(client.Range{Start: 0, End: 100})
	rs.Add(client.Range{Start: 200, End: 300})
	return ResumeState{Source: "ftp://h:21/a b\n", Dest: "/tmp/x", Size: 1000, MTime: 1700000000123456789,
		Offset: 0, Length: -1, Ranges: rs}
}

func TestStateRoundTrip(t *testing.T) {
	for _, st := range []ResumeState{sampleState(), {Source: "s", Dest: "d", Size: -1, Length: -1}} {
		b := st.marshal()
		got, err := parseState(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !got.matches(st) || got.Ranges.String() != st.Ranges.String() {
			t.Fatalf("round trip: %+v, want %+v", got, st)
		}
		name := filepath.Join(t.TempDir(), "f"+RangesSuffix)
		if err := WriteResumeState(name, st); err != nil {
			t.Fatal(err)
		}
		got, err = ReadResumeState(name)
		if err != nil || !got.matches(st) {
			t.Fatalf("file round trip: %+v, %v", got, err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(name)); len(entries) != 1 {
			t.Fatalf("temporary files left: %v", entries)
		}
	}
}

func TestStateCorruptIgnored(t *testing.T) {
	good := sampleState().marshal()
	// Every strict prefix fails, and so does any one flipped byte.
	for i := range len(good) {
		if _, err := parseState(good[:i]); err == nil {
			t.Fatalf("a %d-byte prefix parsed", i)
		}
		bad := bytes.Clone(good)
		bad[i] ^= 0x20
		if _, err := parseState(bad); err == nil {
			t.Fatalf("flipped byte %d parsed: %q", i, bad)
		}
	}
	for _, s := range []string{
		"",
		"garbage",
		"ferry-resume 2\n",
		strings.Replace(string(good), "ranges 0-100,200-300", "ranges 200-300,0-100", 1), // CRC wrong
	} {
		if _, err := parseState([]byte(s)); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
	// A correct CRC does not make nonsense valid.
	for _, body := range []string{
		stateMagic + "\nsource \"a\"\ndest \"b\"\nsize 1\nmtime 0\nwindow 0 -1\nranges 5-1\n",
		stateMagic + "\nsource \"a\"\ndest \"b\"\nsize -2\nmtime 0\nwindow 0 -1\nranges \n",
		stateMagic + "\nsource a\ndest \"b\"\nsize 1\nmtime 0\nwindow 0 -1\nranges \n",
		stateMagic + "\nsource \"a\"\ndest \"b\"\nsize 1\nmtime 0\nwindow 0 -1\nranges 0-5,5-9\n",
		stateMagic + "\nsource \"a\"\ndest \"b\"\nsize 1\nmtime 0\nwindow 0 -1\n",
	} {
		b := []byte(body)
		b = fmt.Appendf(b, "crc %08x\n", crc32.ChecksumIEEE(b))
		if _, err := parseState(b); err == nil {
			t.Errorf("%q parsed", b)
		}
	}
}

func FuzzParseState(f *testing.F) {
	f.Add(sampleState().marshal())
	f.Add(ResumeState{Source: "", Dest: "", Size: -1, Length: -1}.marshal())
	f.Add([]byte("ferry-resume 1\ncrc 00000000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseState(b)
		if err != nil {
			return
		}
		again, err := parseState(st.marshal())
		if err != nil || !again.matches(st) || again.Ranges.String() != st.Ranges.String() {
			t.Fatalf("re-encoded %+v gave %+v, %v", st, again, err)
		}
	})
}
