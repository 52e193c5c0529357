package wire

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

var listNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestAppendLIST(t *testing.T) {
	dir := NewEntry("gt")
	dir.Type, dir.Mode, dir.Size, dir.Owner, dir.Group = "dir", 0o755, 4096, "root", "root"
	dir.Modify = time.Date(2026, 11, 21, 19, 34, 0, 0, time.UTC)
	file := NewEntry("big.dat")
	file.Type, file.Size, file.UID, file.GID = "file", 1073741824, 0, 5
	file.Modify = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	link := NewEntry("l")
	link.Type, link.Slink, link.Size = "slink", "/a b", 3
	link.Modify = time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	special := NewEntry("s")
	special.Type, special.Mode = "file", 0o7644
	special.Modify = time.Date(2026, 11, 22, 12, 0, 1, 0, time.UTC) // in the future
	fifo := NewEntry("p")
	fifo.Type, fifo.Mode = TypeFIFO, 0o600
	sock := NewEntry("k")
	sock.Type = TypeSocket
	tests := []struct {
		e    Entry
		want string
	}{
		{fifo, "prw-------   1    ferry    ferry            0 Jan  1  1970 p"},
		{sock, "srw-r--r--   1    ferry    ferry            0 Jan  1  1970 k"},
		// GCT's own layout, from the captures.
		{dir, "drwxr-xr-x   1     root     root         4096 Nov 21 19:34 gt"},
		{file, "-rw-r--r--   1        0        5   1073741824 Jan  2  2020 big.dat"},
		{link, "lrwxrwxrwx   1    ferry    ferry            3 Jul  1 00:00 l -> /a b"},
		{special, "-rwSr-Sr-T   1    ferry    ferry            0 Nov 22  2026 s"},
		{NewEntry("unknown"), "-rw-r--r--   1    ferry    ferry            0 Jan  1  1970 unknown"},
	}
	for _, tt := range tests {
		if got := string(AppendLIST(nil, tt.e, listNow)); got != tt.want {
			t.Errorf("AppendLIST =\n%q\nwant\n%q", got, tt.want)
		}
	}
}

func TestParseLISTLine(t *testing.T) {
	mk := func(name, typ string, mode int, size int64, owner, group string, mod time.Time) Entry {
		e := NewEntry(name)
		e.Type, e.Mode, e.Size, e.Owner, e.Group, e.Modify = typ, mode, size, owner, group, mod
		return e
	}
	tests := []struct {
		line string
		want Entry
		err  bool
	}{
		{"drwxr-xr-x   2     root     root         4096 Nov 21 19:34 gt",
			mk("gt", "dir", 0o755, 4096, "root", "root", time.Date(2026, 11, 21, 19, 34, 0, 0, time.UTC)), false},
		{"-rw-r--r--   1     root     root            2 Nov 21 19:59 a.txt\r",
			mk("a.txt", "file", 0o644, 2, "root", "root", time.Date(2026, 11, 21, 19, 59, 0, 0, time.UTC)), false},
		// Dec 25 is after "now" this year, so it is last year's.
		{"-rw-r--r-- 1 u g 10 Dec 25 10:00 file with  spaces ",
			mk("file with  spaces ", "file", 0o644, 10, "u", "g", time.Date(2025, 12, 25, 10, 0, 0, 0, time.UTC)), false},
		{"-rw-r--r-- 1 u g 10 Jan  2  2006 old",
			mk("old", "file", 0o644, 10, "u", "g", time.Date(2006, 1, 2, 0, 0, 0, 0, time.UTC)), false},
		{"-rw-r--r--+ 1 u 10 Jan 2 2006 acl",
			mk("acl", "file", 0o644, 10, "u", "", time.Date(2006, 1, 2, 0, 0, 0, 0, time.UTC)), false},
		{"-rwsr-sr-t 1 u g 0 Jan 2 2006 s",
			mk("s", "file", 0o7755, 0, "u", "g", time.Date(2006, 1, 2, 0, 0, 0, 0, time.UTC)), false},
		{"drwx------ 2 Jan 12 4096 Nov 21 19:34 x",
			mk("x", "dir", 0o700, 4096, "Jan", "12", time.Date(2026, 11, 21, 19, 34, 0, 0, time.UTC)), false},
		{"-rw-r--r-- 1 u g 5 Feb 29 10:00 leap",
			mk("leap", "file", 0o644, 5, "u", "g", time.Date(2024, 2, 29, 10, 0, 0, 0, time.UTC)), false},
		{"total 24", Entry{}, true},
		{"", Entry{}, true},
		{"-rw-r--r-- 1 u g 10 Jan 2 2006", Entry{}, true},
		{"-rw-r--r-- 1 u g 10 Jan 2 2006 ", Entry{}, true},
		{"-rw-r--r-- 1 u g x Jan 2 2006 n", Entry{}, true},
		{"-rw-r--r-- 1 u g 10 Foo 2 2006 n", Entry{}, true},
		{"-rw-r--r-- 1 u g 10 Jan 32 2006 n", Entry{}, true},
		{"-rw-r--r-- 1 u g 10 Feb 30 2006 n", Entry{}, true},
		{"-rw-r--r-- 1 u g 10 Jan 2 24:00 n", Entry{}, true},
		{"-rw-r--r-- 1 u g 99999999999999999999 Jan 2 2006 n", Entry{}, true},
		{"?rw-r--r-- 1 u g 10 Jan 2 2006 n", Entry{}, true},
		{"-rwzr--r-- 1 u g 10 Jan 2 2006 n", Entry{}, true},
	}
	for _, tt := range tests {
		got, err := ParseLISTLine(tt.line, listNow)
		if (err != nil) != tt.err {
			t.Errorf("ParseLISTLine(%q) err = %v, want err=%v", tt.line, err, tt.err)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseLISTLine(%q) =\n%#v\nwant\n%#v", tt.line, got, tt.want)
		}
	}
	if _, err := ParseLISTLine("total 24", listNow); !errors.Is(err, ErrNotEntry) {
		t.Errorf("total line: err = %v", err)
	}
	l, err := ParseLISTLine("lrwxrwxrwx 1 u g 5 Jan 2 2006 my link -> /a -> b", listNow)
	if err != nil || l.Name != "my link" || l.Slink != "/a -> b" || l.Type != "slink" {
		t.Errorf("link = %#v, %v", l, err)
	}
	if _, err := ParseLISTLine("crw-rw---- 1 root tty 4, 0 Jan 2 2006 tty0", listNow); err != nil {
		t.Errorf("device line: %v", err)
	}
}

func TestLISTRoundTrip(t *testing.T) {
	times := []time.Time{
		listNow,
		listNow.Add(-time.Minute),
		time.Date(2026, 6, 1, 8, 30, 0, 0, time.UTC),    // within six months
		time.Date(2025, 12, 31, 23, 59, 0, 0, time.UTC), // last year, recent
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC), // future: year form
	}
	for _, typ := range []string{"file", "dir", "slink"} {
		for _, mt := range times {
			e := NewEntry("name with spaces")
			e.Type, e.Size, e.Mode, e.Owner, e.Group, e.Modify = typ, 12345, 0o640, "alice", "grid", mt
			if typ == "slink" {
				e.Slink = "/target"
			}
			line := string(AppendLIST(nil, e, listNow))
			got, err := ParseLISTLine(line, listNow)
			if err != nil {
				t.Errorf("ParseLISTLine(%q): %v", line, err)
				continue
			}
			if got.Name != e.Name || got.Type != typ || got.Size != e.Size || got.Mode != e.Mode ||
				got.Owner != e.Owner || got.Group != e.Group || got.Slink != e.Slink {
				t.Errorf("round trip via %q = %#v", line, got)
			}
			want := mt.Truncate(time.Minute)
			if mt.After(listNow) || listNow.Sub(mt) >= sixMonths {
				want = time.Date(mt.Year(), mt.Month(), mt.Day(), 0, 0, 0, 0, time.UTC)
			}
			if !got.Modify.Equal(want) {
				t.Errorf("round trip via %q: Modify = %v, want %v", line, got.Modify, want)
			}
		}
	}
}

func TestLISTTruncation(t *testing.T) {
	line := "drwxr-xr-x   2     root     root         4096 Nov 21 19:34 gt"
	full, _ := ParseLISTLine(line, listNow)
	for i := 0; i < len(line); i++ {
		if got, err := ParseLISTLine(line[:i], listNow); err == nil && reflect.DeepEqual(got, full) {
			t.Errorf("prefix %q parses like the full line", line[:i])
		}
	}
}

func FuzzParseLISTLine(f *testing.F) {
	f.Add("drwxr-xr-x   2     root     root         4096 Nov 21 19:34 gt", int64(0))
	f.Add("lrwxrwxrwx 1 u g 5 Feb 29 10:00 my link -> /a", int64(-1e9))
	f.Add("total 5", int64(0))
	f.Fuzz(func(t *testing.T, line string, delta int64) {
		now := listNow.Add(time.Duration(delta))
		e, err := ParseLISTLine(line, now)
		if err != nil {
			return
		}
		if e.Name == "" || e.Size < 0 || e.Mode < 0 || e.Mode > 0o7777 {
			t.Fatalf("bad entry %#v from %q", e, line)
		}
		// Writing it back and parsing again keeps what LIST can carry.
		out := string(AppendLIST(nil, e, now))
		e2, err := ParseLISTLine(out, now)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if e2.Size != e.Size || e2.Mode != e.Mode || (e.Type != "" && e2.Type != e.Type) {
			t.Fatalf("round trip of %q via %q: %#v", line, out, e2)
		}
	})
}
