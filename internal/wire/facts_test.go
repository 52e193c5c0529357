package wire

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFactSet(t *testing.T) {
	if got := ParseFactSet("type;size;modify;"); got != FactType|FactSize|FactModify {
		t.Errorf("ParseFactSet = %v", got)
	}
	if got := ParseFactSet("TYPE;Unix.Mode;charset;bogus;;x.count"); got != FactType|FactMode|FactCount {
		t.Errorf("ParseFactSet = %v", got)
	}
	if got := ParseFactSet(""); got != 0 {
		t.Errorf("ParseFactSet(\"\") = %v", got)
	}
	if got := (FactSize | FactType | FactModify).String(); got != "Type;Modify;Size;" {
		t.Errorf("String = %q", got)
	}
	all := "Type;Modify;Size;Perm;UNIX.mode;UNIX.owner;UNIX.uid;UNIX.group;UNIX.gid;Unique;UNIX.slink;X.count;"
	if got := AllFacts.String(); got != all {
		t.Errorf("AllFacts.String = %q", got)
	}
	if got := ParseFactSet(all); got != AllFacts {
		t.Errorf("ParseFactSet(all) = %v", got)
	}
	if FactSet(0).String() != "" {
		t.Errorf("empty String not empty")
	}
	if got := FeatMLST(AllFacts &^ FactCount); got != "Type*;Modify*;Size*;Perm*;UNIX.mode*;UNIX.owner*;UNIX.uid*;UNIX.group*;UNIX.gid*;Unique*;UNIX.slink*;X.count;" {
		t.Errorf("FeatMLST = %q", got)
	}
	if got := FeatMLST(0); got != "Type;Modify;Size;Perm;UNIX.mode;UNIX.owner;UNIX.uid;UNIX.group;UNIX.gid;Unique;UNIX.slink;X.count;" {
		t.Errorf("FeatMLST(0) = %q", got)
	}
}

// gctMLST is the MLST line of protocol.md §9.1, as the control channel
// carries it (leading space).
const gctMLST = " Type=file;Modify=20261121193718;Size=2;Perm=r;UNIX.mode=0644;UNIX.owner=root;UNIX.uid=0;UNIX.group=root;UNIX.gid=0;Unique=fe00-98c079; /scratch/labdata/tree/a.txt"

func gctEntry() Entry {
	e := NewEntry("/scratch/labdata/tree/a.txt")
	e.Type, e.Size, e.Perm, e.Mode = "file", 2, "r", 0o644
	e.Modify = time.Date(2026, 11, 21, 19, 37, 18, 0, time.UTC)
	e.Owner, e.Group, e.UID, e.GID, e.Unique = "root", "root", 0, 0, "fe00-98c079"
	return e
}

func TestAppendFacts(t *testing.T) {
	if got := string(AppendFacts([]byte(" "), gctEntry(), AllFacts)); got != gctMLST {
		t.Errorf("AppendFacts =\n%q\nwant\n%q", got, gctMLST)
	}
	e := NewEntry("sub dir")
	e.Type, e.Count, e.Mode, e.Slink = "cdir", 4, 0o1755, "/t"
	if got := string(AppendFacts(nil, e, AllFacts)); got != "Type=cdir;UNIX.mode=1755;UNIX.slink=/t;X.count=4; sub dir" {
		t.Errorf("AppendFacts = %q", got)
	}
	if got := string(AppendFacts(nil, e, FactType|FactSize)); got != "Type=cdir; sub dir" {
		t.Errorf("AppendFacts selected = %q", got)
	}
	if got := string(AppendFacts(nil, NewEntry("x"), AllFacts)); got != " x" {
		t.Errorf("AppendFacts no facts = %q", got)
	}
	// Unsafe values are dropped rather than corrupting the line.
	e = NewEntry("n")
	e.Owner, e.Group, e.Unique, e.Slink, e.Perm = "a;b", "c=d", "x\r\n250 End", "/ok", "r"
	if got := string(AppendFacts(nil, e, AllFacts)); got != "Perm=r;UNIX.slink=/ok; n" {
		t.Errorf("AppendFacts unsafe = %q", got)
	}
}

func TestParseFactsLine(t *testing.T) {
	got, err := ParseFactsLine(gctMLST)
	if err != nil {
		t.Fatal(err)
	}
	want := gctEntry()
	if got.Facts["unique"] != "fe00-98c079" || got.Facts["unix.mode"] != "0644" || len(got.Facts) != 10 {
		t.Errorf("Facts = %v", got.Facts)
	}
	got.Facts = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseFactsLine =\n%#v\nwant\n%#v", got, want)
	}

	tests := []struct {
		line string
		name string
		typ  string
		size int64
		ok   bool
	}{
		{"Type=dir;Modify=20261121193718; sub1", "sub1", "dir", -1, true},
		{"type=CDIR; .", ".", "cdir", -1, true},
		{"Type=OS.unix=slink:/x; l", "l", "OS.unix=slink:/x", -1, true},
		{"Type=file;Size=5; name with; semicolons and  spaces ", "name with; semicolons and  spaces ", "file", 5, true},
		{"Size=-5; x", "x", "", -1, true},
		{"Size=+5; x", "x", "", -1, true},
		{"Size=abc;Modify=bogus;UNIX.mode=999;UNIX.uid=x; y", "y", "", -1, true},
		{"Perm=;Type=slink;Size=5;UNIX.mode=0777; sub1/l", "sub1/l", "slink", 5, true},
		{" name", "name", "", -1, true},
		{" a b", "a b", "", -1, true},
		{"Type=file;", "", "", 0, false},
		{"Type=file; ", "", "", 0, false},
		{"Type=file", "", "", 0, false},
		{"name", "", "", 0, false},
		{"=x; n", "", "", 0, false},
		{"", "", "", 0, false},
		{" ", "", "", 0, false},
	}
	for _, tt := range tests {
		e, err := ParseFactsLine(tt.line)
		if (err == nil) != tt.ok {
			t.Errorf("ParseFactsLine(%q) err = %v, want ok=%v", tt.line, err, tt.ok)
			continue
		}
		if err == nil && (e.Name != tt.name || e.Type != tt.typ || e.Size != tt.size) {
			t.Errorf("ParseFactsLine(%q) = name %q type %q size %d; want %q %q %d", tt.line, e.Name, e.Type, e.Size, tt.name, tt.typ, tt.size)
		}
	}
	e, _ := ParseFactsLine("Size=abc;Modify=bogus;UNIX.mode=999;UNIX.uid=x;X.count=4;UNIX.gid=7; y")
	if !e.Modify.IsZero() || e.Mode != -1 || e.UID != -1 || e.Count != 4 || e.GID != 7 || e.Facts["modify"] != "bogus" {
		t.Errorf("bad-value handling: %#v", e)
	}
}

func TestFactsRoundTrip(t *testing.T) {
	entries := []Entry{gctEntry(), NewEntry("only name"), NewEntry(";odd; name=")}
	e := NewEntry("link")
	e.Type, e.Slink, e.Count, e.Mode, e.Modify = "slink", "/abs/target", 3, 0o7777, time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC)
	entries = append(entries, e)
	for _, e := range entries {
		for _, sel := range []FactSet{AllFacts, FactType | FactSize, 0} {
			line := string(AppendFacts(nil, e, sel))
			got, err := ParseFactsLine(line)
			if err != nil {
				t.Errorf("ParseFactsLine(%q): %v", line, err)
				continue
			}
			got.Facts = nil
			if want := restrict(e, sel); !reflect.DeepEqual(got, want) {
				t.Errorf("round trip via %q:\n got %#v\nwant %#v", line, got, want)
			}
		}
	}
}

// restrict returns e with only the facts in sel known.
func restrict(e Entry, sel FactSet) Entry {
	r := NewEntry(e.Name)
	if sel&FactType != 0 {
		r.Type = e.Type
	}
	if sel&FactModify != 0 {
		r.Modify = e.Modify
	}
	if sel&FactSize != 0 {
		r.Size = e.Size
	}
	if sel&FactPerm != 0 {
		r.Perm = e.Perm
	}
	if sel&FactMode != 0 {
		r.Mode = e.Mode
	}
	if sel&FactOwner != 0 {
		r.Owner = e.Owner
	}
	if sel&FactUID != 0 {
		r.UID = e.UID
	}
	if sel&FactGroup != 0 {
		r.Group = e.Group
	}
	if sel&FactGID != 0 {
		r.GID = e.GID
	}
	if sel&FactUnique != 0 {
		r.Unique = e.Unique
	}
	if sel&FactSlink != 0 {
		r.Slink = e.Slink
	}
	if sel&FactCount != 0 {
		r.Count = e.Count
	}
	return r
}

func TestFactsTruncation(t *testing.T) {
	full, err := ParseFactsLine(gctMLST)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(gctMLST); i++ {
		got, err := ParseFactsLine(gctMLST[:i])
		if err == nil && reflect.DeepEqual(got, full) {
			t.Errorf("prefix %q parses like the full line", gctMLST[:i])
		}
	}
}

func FuzzParseFactsLine(f *testing.F) {
	f.Add(gctMLST)
	f.Add(" name with spaces")
	f.Add("Type=OS.unix=slink:/x;UNIX.slink=/a; l -> x")
	f.Add("Type=OS.unix=fifo;Size=0; p")
	f.Add("Perm=;Type=slink;Size=5;UNIX.mode=0777; sub1/l")
	f.Fuzz(func(t *testing.T, line string) {
		e, err := ParseFactsLine(line)
		if err != nil {
			return
		}
		if e.Name == "" {
			t.Fatalf("empty name from %q", line)
		}
		for k := range e.Facts {
			if k != strings.ToLower(k) {
				t.Fatalf("fact key %q not lower-cased", k)
			}
		}
		// What we write back must parse to the same known values, minus
		// values AppendFacts refuses to write.
		out := string(AppendFacts(nil, e, AllFacts))
		if _, _, ok := splitFacts(e.Name); ok && strings.HasPrefix(out, " ") {
			return // a fact-less line whose name looks like facts is ambiguous
		}
		e2, err := ParseFactsLine(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		e.Facts, e2.Facts = nil, nil
		clean := func(s string) string {
			if strings.ContainsAny(s, ";=\r\n") {
				return ""
			}
			return s
		}
		if strings.ContainsAny(e.Type, ";\r\n") {
			e.Type = "" // Type may hold '=' ("OS.unix=fifo")
		}
		e.Perm, e.Owner, e.Group, e.Unique, e.Slink =
			clean(e.Perm), clean(e.Owner), clean(e.Group), clean(e.Unique), clean(e.Slink)
		e.Modify = e.Modify.Truncate(time.Second)
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip of %q via %q:\n got %#v\nwant %#v", line, out, e2, e)
		}
	})
}

// TestAppendFactsOSType: an OS-specific type (RFC 3659 §7.5.1) is
// written with its '=', and parses back.
func TestAppendFactsOSType(t *testing.T) {
	for _, typ := range []string{TypeFIFO, TypeSocket, TypeCharDevice, TypeBlockDevice} {
		e := NewEntry("x")
		e.Type, e.Size = typ, 0
		got := string(AppendFacts(nil, e, AllFacts))
		if want := "Type=" + typ + ";Size=0; x"; got != want {
			t.Errorf("AppendFacts = %q, want %q", got, want)
		}
		if e2, err := ParseFactsLine(got); err != nil || e2.Type != typ {
			t.Errorf("ParseFactsLine(%q) = %q, %v", got, e2.Type, err)
		}
	}
	e := NewEntry("x")
	e.Type = "a;b"
	if got := string(AppendFacts(nil, e, FactType)); got != " x" {
		t.Errorf("AppendFacts with a ';' in Type = %q", got)
	}
}
