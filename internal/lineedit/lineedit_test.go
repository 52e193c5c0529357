package lineedit

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keys names the byte sequences terminals send.
const (
	up, down, left, right = "\x1b[A", "\x1b[B", "\x1b[D", "\x1b[C"
	home, end, del        = "\x1b[H", "\x1b[F", "\x1b[3~"
	altB, altF            = "\x1bb", "\x1bf"
	ctrlLeft              = "\x1b[1;5D"
	bs                    = "\x7f"
)

func c(k byte) string { return string(rune(k & 0x1f)) }

func read(t *testing.T, e *Editor) (string, error) {
	t.Helper()
	return e.ReadLine("> ")
}

func TestEditing(t *testing.T) {
	for _, tc := range []struct {
		name, keys, want string
	}{
		{"plain", "hello\r", "hello"},
		{"crlf", "hello\r\n", "hello"},
		{"lf", "hello\n", "hello"},
		{"utf8", "grüße\r", "grüße"},
		{"backspace", "helo" + bs + "lo\r", "hello"},
		{"ctrl-h", "ab" + c('H') + "c\r", "ac"},
		{"left insert", "hllo" + left + left + left + "e\r", "hello"},
		{"right", "ac" + left + left + right + "b\r", "abc"},
		{"ctrl-a ctrl-e", "ello" + c('A') + "h" + c('E') + "!\r", "hello!"},
		{"home end", "ello" + home + "h" + end + "!\r", "hello!"},
		{"home end ~", "b\x1b[1~a\x1b[4~c\r", "abc"},
		{"ss3 home", "b\x1bOHa\r", "ab"},
		{"ctrl-b ctrl-f", "ac" + c('B') + "b" + c('F') + "d\r", "abcd"},
		{"delete", "abc" + home + del + "\r", "bc"},
		{"ctrl-d deletes", "abc" + home + c('D') + "\r", "bc"},
		{"ctrl-u", "get a b" + left + c('U') + "x\r", "xb"},
		{"ctrl-k", "get a b" + home + right + c('K') + "\r", "g"},
		{"ctrl-w", "get some/file  " + c('W') + "x\r", "get x"},
		{"ctrl-w yank", "one two" + c('W') + c('A') + c('Y') + " \r", "two one "},
		{"alt-b alt-f", "one two" + altB + "X" + altB + altB + altF + "Y\r", "oneY Xtwo"},
		{"ctrl-left", "one two" + ctrlLeft + "_\r", "one _two"},
		{"unknown csi ignored", "a\x1b[200~b\x1b[99;99Xc\r", "abc"},
		{"control bytes ignored", "a\x00\x07b\r", "ab"},
		{"ctrl-l", "ab" + c('L') + "c\r", "abc"},
		{"unterminated last line", "last", "last"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := New(strings.NewReader(tc.keys), &out)
			got, err := read(t, e)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestEOFAndInterrupt(t *testing.T) {
	e := New(strings.NewReader(c('D')), io.Discard)
	if _, err := read(t, e); err != io.EOF {
		t.Errorf("ctrl-d on an empty line: %v", err)
	}
	e = New(strings.NewReader(""), io.Discard)
	if _, err := read(t, e); err != io.EOF {
		t.Errorf("end of input: %v", err)
	}
	var out bytes.Buffer
	e = New(strings.NewReader("abc"+c('C')+"next\r"), &out)
	if _, err := read(t, e); !errors.Is(err, ErrInterrupted) {
		t.Errorf("ctrl-c: %v", err)
	}
	if !strings.Contains(out.String(), "abc\x1b[K^C\r\n") {
		t.Errorf("ctrl-c output %q", out.String())
	}
	// The next line starts empty.
	if got, err := read(t, e); got != "next" || err != nil {
		t.Errorf("after ctrl-c: %q, %v", got, err)
	}
}

func TestHistoryWalk(t *testing.T) {
	h := NewHistory(10)
	h.Add("first")
	h.Add("second")
	keys := up + "!\r" + // second!
		up + up + "\r" + // first
		"draft" + up + down + "\r" + // the draft comes back
		up + up + up + up + "\r" + // stops at the oldest
		down + down + "\r" // stops at the new line
	e := New(strings.NewReader(keys), io.Discard)
	e.History = h
	for _, want := range []string{"second!", "first", "draft", "first", ""} {
		got, err := read(t, e)
		if err != nil || got != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	e = New(strings.NewReader(c('P')+c('P')+c('N')+"\r"), io.Discard)
	e.History = h
	if got, _ := read(t, e); got != "second" {
		t.Errorf("ctrl-p ctrl-p ctrl-n: %q", got)
	}
}

func TestHistoryBoundAndFile(t *testing.T) {
	h := NewHistory(3)
	for _, l := range []string{"a", "b", "b", "  ", "c", "d", "e\nf"} {
		h.Add(l)
	}
	var buf bytes.Buffer
	if err := h.Write(&buf); err != nil || buf.String() != "b\nc\nd\n" {
		t.Errorf("history %q, %v", buf.String(), err)
	}
	name := filepath.Join(t.TempDir(), "hist")
	if err := h.Save(name); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file: %v %v", fi.Mode(), err)
	}
	h2 := NewHistory(2)
	if err := h2.Load(name); err != nil || h2.Len() != 2 || h2.At(0) != "c" || h2.At(1) != "d" {
		t.Errorf("loaded %d lines, %v", h2.Len(), err)
	}
	if err := NewHistory(2).Load(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Errorf("missing history file: %v", err)
	}
}

// files completes the last space-separated word from a fixed list.
func files(names ...string) Completer {
	return func(head string) (int, []string, []string) {
		start := strings.LastIndexByte(head, ' ') + 1
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, head[start:]) {
				out = append(out, n)
			}
		}
		return start, out, nil
	}
}

func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		name, keys, want string
		list             []string // names listed
	}{
		{"unique adds a space", "get re\t\r", "get readme.txt ", nil},
		{"unique dir no space", "cd su\t\r", "cd subdir/", nil},
		{"common prefix", "get data\t\r", "get data-202", nil},
		{"ambiguous lists", "get data-202\tx\r", "get data-202x", []string{"data-2024.bin", "data-2025.bin"}},
		{"no match", "get zz\t\r", "get zz", nil},
		{"middle of line", "get re more" + left + left + left + left + left + "\t\r", "get readme.txt  more", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := New(strings.NewReader(tc.keys), &out)
			e.Complete = files("readme.txt", "subdir/", "data-2024.bin", "data-2025.bin")
			got, err := read(t, e)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
			for _, n := range tc.list {
				if !strings.Contains(out.String(), n) {
					t.Errorf("candidate %q not listed in %q", n, out.String())
				}
			}
			if tc.list == nil && strings.Contains(out.String(), "data-2025") {
				t.Errorf("listed candidates: %q", out.String())
			}
		})
	}
}

func TestCompletionListColumnsAndDisplay(t *testing.T) {
	var out bytes.Buffer
	e := New(strings.NewReader("dir/x\t\r"), &out)
	e.Width = func() int { return 12 }
	e.Complete = func(head string) (int, []string, []string) {
		return 0, []string{"dir/x1", "dir/x2", "dir/x3", "dir/x4", "dir/x5"}, []string{"x1", "x2", "x3", "x4", "x5"}
	}
	if _, err := read(t, e); err != nil {
		t.Fatal(err)
	}
	// Width 12, columns of 4: five names in two rows, column-major.
	if !strings.Contains(out.String(), "\r\nx1  x3  x5\r\nx2  x4\r\n") {
		t.Errorf("list %q", out.String())
	}
}

func TestRefreshScrollsLongLines(t *testing.T) {
	var out bytes.Buffer
	e := New(strings.NewReader(strings.Repeat("a", 30)+"b"+home+"\r"), &out)
	e.Width = func() int { return 20 }
	got, err := read(t, e)
	if err != nil || len(got) != 31 {
		t.Fatalf("%q %v", got, err)
	}
	// After the last key before Home, the visible part ends with the b.
	frames := strings.Split(out.String(), "\r")
	for _, f := range frames {
		if v := strings.TrimSuffix(f, "\x1b[K"); len(v) > 19 && !strings.Contains(v, "\x1b") {
			t.Errorf("frame wider than the terminal: %q", f)
		}
	}
	if !strings.Contains(out.String(), "> aaaaaaaaaaaaaaaab\x1b[K") {
		t.Errorf("no scrolled frame in %q", out.String())
	}
}

func FuzzReadLine(f *testing.F) {
	f.Add([]byte("abc\x1b[D\x1b[3~\t\r"))
	f.Add([]byte("\x1b[1;5C\x1b\x1bO\x7f\x17\x15\r"))
	f.Fuzz(func(t *testing.T, keys []byte) {
		e := New(bytes.NewReader(keys), io.Discard)
		e.History = NewHistory(4)
		e.History.Add("old")
		e.Complete = files("alpha", "alpine", "beta/")
		for range 64 {
			line, err := e.ReadLine("$ ")
			if err == io.EOF {
				return
			}
			if e.pos < 0 || e.pos > len(e.buf) {
				t.Fatalf("cursor %d outside line %q", e.pos, line)
			}
		}
	})
}
