package lineterm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Key sequences terminals send.
const (
	keyUp, keyDown, keyLeft = "\x1b[A", "\x1b[B", "\x1b[D"
)

// newTestLineTerm returns a LineTerm reading keys through a KeyReader and
// drawing into out, on a screen width columns wide.
func newTestLineTerm(t *testing.T, keys string, width int, hist *History) (*LineTerm, *bytes.Buffer) {
	t.Helper()
	if hist == nil {
		hist = NewHistory(10)
	}
	var out bytes.Buffer
	k := NewKeyReader(strings.NewReader(keys), func() { t.Error("interrupt called at the prompt") })
	t.Cleanup(k.Stop)
	lt := NewLineTerm(k, &out, hist)
	lt.Size = func() (int, int, error) { return width, 24, nil }
	return lt, &out
}

// TestShellTermInterrupt: Ctrl-C at the prompt abandons the line (shown
// with ^C, not kept in the history) and the next line starts empty;
// Ctrl-D on an empty line and the end of the input are io.EOF.
func TestShellTermInterrupt(t *testing.T) {
	lt, out := newTestLineTerm(t, "abc\x03\x03next\r\x04", 80, nil)
	if _, err := lt.ReadLine("> "); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("ctrl-c: %v", err)
	}
	if !strings.Contains(out.String(), "abc^C\r\n") {
		t.Errorf("ctrl-c output %q", out.String())
	}
	out.Reset()
	// At an empty prompt, as in a shell.
	if _, err := lt.ReadLine("> "); !errors.Is(err, ErrInterrupted) || out.String() != "> ^C\r\n" {
		t.Errorf("ctrl-c at an empty prompt: %v, output %q", err, out.String())
	}
	if got, err := lt.ReadLine("> "); got != "next" || err != nil {
		t.Errorf("after ctrl-c: %q, %v", got, err)
	}
	if _, err := lt.ReadLine("> "); err != io.EOF {
		t.Errorf("ctrl-d on an empty line: %v", err)
	}
	if len(lt.hist.lines) != 1 || lt.hist.lines[0] != "next" {
		t.Errorf("history %q", lt.hist.lines)
	}

	lt, _ = newTestLineTerm(t, "", 80, nil)
	if _, err := lt.ReadLine("> "); err != io.EOF {
		t.Errorf("end of input: %v", err)
	}
	// A Ctrl-C inside a bracketed paste abandons the line too.
	lt, _ = newTestLineTerm(t, "\x1b[200~rm x\x03\x1b[201~ok\r", 80, nil)
	if _, err := lt.ReadLine("> "); !errors.Is(err, ErrInterrupted) {
		t.Errorf("ctrl-c in a paste: %v", err)
	}
	if got, err := lt.ReadLine("> "); got != "ok" || err != nil {
		t.Errorf("after the paste: %q, %v", got, err)
	}
}

// TestShellTermBusyInterrupt: while a command runs, Ctrl-C calls the
// interrupt and the other keys wait for the next line.
func TestShellTermBusyInterrupt(t *testing.T) {
	pr, pw := io.Pipe()
	var calls atomic.Int32
	k := NewKeyReader(pr, func() { calls.Add(1) })
	k.Busy.Store(true)
	go func() {
		pw.Write([]byte("a\x03b"))
		pw.Close()
	}()
	got, err := io.ReadAll(k)
	if err != nil || string(got) != "ab" || calls.Load() != 1 {
		t.Errorf("read %q, %v; %d interrupts", got, err, calls.Load())
	}
}

func TestShellTermKeys(t *testing.T) {
	for _, tc := range []struct {
		name, keys, want string
	}{
		{"plain", "hello\r", "hello"},
		{"crlf", "hello\r\nnext\r", "hello"},
		{"utf8", "grüße\r", "grüße"},
		{"backspace", "helo\x7flo\r", "hello"},
		{"left insert", "hllo" + keyLeft + keyLeft + keyLeft + "e\r", "hello"},
		{"ctrl-a ctrl-e", "ello\x01h\x05!\r", "hello!"},
		{"home end csi", "ello\x1b[Hh\x1b[F!\r", "hello!"},
		{"home end ~", "b\x1b[1~a\x1b[4~c\r", "abc"},
		{"home end 7~ 8~", "b\x1b[7~a\x1b[8~c\r", "abc"},
		{"ss3", "b\x1bOHa\x1bOFc\x1bODd\r", "abdc"},
		{"ctrl-b ctrl-f", "ac\x02b\x06d\r", "abcd"},
		{"delete", "abc\x01\x1b[3~\r", "bc"},
		{"ctrl-d deletes", "abc\x01\x04\r", "bc"},
		{"ctrl-u", "get a b" + keyLeft + "\x15x\r", "xb"},
		{"ctrl-k", "get a b\x01\x1b[C\x0b\r", "g"},
		{"ctrl-w", "get some/file\x17x\r", "get x"},
		{"alt-backspace", "get some/file\x1b\x7fx\r", "get x"},
		// x/term moves right to the start of the next word, not to the
		// end of this one.
		{"alt-b alt-f", "one two\x1bbX\x1bb\x1bb\x1bfY\r", "one YXtwo"},
		{"ctrl-left ctrl-right", "one two\x1b[1;5D\x1b[1;5D\x1b[1;5C_\r", "one _two"},
		{"control bytes ignored", "a\x00\x07b\r", "ab"},
		{"tab without Completer", "a\tb\r", "ab"},
		{"pasted tab kept", "\x1b[200~a\tb\x1b[201~\r", "a\tb"},
		{"ctrl-l", "ab\x0cc\r", "abc"},
		// Input Terminal would wait on forever or read past.
		{"invalid utf-8", "a\xffb\xc3\r", "ab"},
		{"runaway escape", "\x1b[" + strings.Repeat("\xa5", 300) + "20J~\r", "20J~"},
		{"long escape", "\x1b[" + strings.Repeat("1", 40) + "\r", strings.Repeat("1", 10)},
		{"alt-digit", "\x1b1ab\r", "ab"},
		{"unknown ss3", "\x1bOPab\r", "ab"},
		{"csi with another final byte", "\x1b[7^ab\r", "ab"},
		{"esc before ctrl-u", "ab\x1b\x15c\r", "c"},
		{"interrupt key typed", "a\ue003b\r", "ab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt, _ := newTestLineTerm(t, tc.keys, 80, nil)
			got, err := lt.ReadLine("> ")
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestShellTermSplitKeys: a key sequence or rune cut between two reads
// still counts.
func TestShellTermSplitKeys(t *testing.T) {
	pr, pw := io.Pipe()
	k := NewKeyReader(pr, func() {})
	defer k.Stop()
	go func() {
		for _, b := range []string{"bc\x1b", "[", "1~a\x1b[", "4~gr\xc3", "\xbc\x1bO", "D\x1b", "[1;5", "D\r"} {
			pw.Write([]byte(b))
		}
		pw.Close()
	}()
	lt := NewLineTerm(k, io.Discard, NewHistory(1))
	if got, err := lt.ReadLine("> "); err != nil || got != "abcgrü" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestShellTermHistory(t *testing.T) {
	h := NewHistory(10)
	h.Add("first")
	h.Add("second")
	keys := keyUp + "!\r" + // second!
		keyUp + keyUp + "\r" + // second
		"draft" + keyUp + keyDown + "\r" + // the draft comes back
		keyUp + keyUp + keyUp + keyUp + keyUp + "\r" + // stops at the oldest
		keyDown + keyDown + "\r" + // nothing newer than the new line
		"\x10\x10\x0e\r" // Ctrl-P Ctrl-P Ctrl-N
	lt, _ := newTestLineTerm(t, keys, 80, h)
	for _, want := range []string{"second!", "second", "draft", "first", "", "first"} {
		got, err := lt.ReadLine("> ")
		if err != nil || got != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	// Blank lines and repeats are not kept.
	if got := strings.Join(h.lines, "|"); got != "first|second|second!|second|draft|first" {
		t.Errorf("history %q", got)
	}
}

func TestShellHistoryBoundAndFile(t *testing.T) {
	h := NewHistory(3)
	for _, l := range []string{"a", "b", "b", "  ", "c", "d", "e\nf"} {
		h.Add(l)
	}
	name := filepath.Join(t.TempDir(), "hist")
	if err := h.Save(name); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "b\nc\nd\n" {
		t.Errorf("history file %q, %v", b, err)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file: %v %v", fi.Mode(), err)
	}
	h2 := NewHistory(2)
	if err := h2.Load(name); err != nil || strings.Join(h2.lines, "|") != "c|d" {
		t.Errorf("loaded %q, %v", h2.lines, err)
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

func TestShellTermCompletion(t *testing.T) {
	for _, tc := range []struct {
		name, keys, want string
		list             string // names listed above the prompt
	}{
		{"unique adds a space", "get re\t\r", "get readme.txt ", ""},
		{"unique dir no space", "cd su\t\r", "cd subdir/", ""},
		{"common prefix", "get data\t\r", "get data-202", ""},
		{"ambiguous lists", "get data-202\tx\r", "get data-202x", "data-2024.bin  data-2025.bin\r\n> get data-202"},
		{"no match", "get zz\t\r", "get zz", ""},
		{"middle of line", "get re more" + strings.Repeat(keyLeft, 5) + "\t\r", "get readme.txt  more", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt, out := newTestLineTerm(t, tc.keys, 80, nil)
			lt.Complete = files("readme.txt", "subdir/", "data-2024.bin", "data-2025.bin")
			got, err := lt.ReadLine("> ")
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
			if tc.list != "" && !strings.Contains(out.String(), tc.list) {
				t.Errorf("list %q not in %q", tc.list, out.String())
			}
			if tc.list == "" && strings.Contains(out.String(), "data-2025") {
				t.Errorf("listed candidates: %q", out.String())
			}
		})
	}
}

func TestShellTermCompletionColumns(t *testing.T) {
	lt, out := newTestLineTerm(t, "dir/x\t\r", 12, nil)
	lt.Complete = func(head string) (int, []string, []string) {
		return 0, []string{"dir/x1", "dir/x2", "dir/x3", "dir/x4", "dir/x5"}, []string{"x1", "x2", "x3", "x4", "x5"}
	}
	if _, err := lt.ReadLine("> "); err != nil {
		t.Fatal(err)
	}
	// Width 12, columns of 4: five names in two rows, column-major,
	// printed above the prompt, which is drawn again.
	if !strings.Contains(out.String(), "\x1b[Kx1  x3  x5\r\nx2  x4\r\n> dir/x") {
		t.Errorf("list %q", out.String())
	}
}

func FuzzShellTermReadLine(f *testing.F) {
	f.Add([]byte("abc\x1b[D\x1b[3~\t\r"))
	f.Add([]byte("\x1b[1;5C\x1b\x1bO\x7f\x17\x15\x03\r"))
	f.Add([]byte("\x1b[200~a\x03\tb\x1b[201~\r\x04"))
	f.Add([]byte("\x1b[" + strings.Repeat("\xa5", 300) + "20J~\r"))
	f.Fuzz(func(t *testing.T, keys []byte) {
		h := NewHistory(4)
		h.Add("old")
		lt, _ := newTestLineTerm(t, string(keys), 20, h)
		lt.Complete = files("alpha", "alpine", "beta/")
		for range 64 {
			line, err := lt.ReadLine("$ ")
			if err == io.EOF {
				return
			}
			if strings.ContainsRune(line, interruptKey) {
				t.Fatalf("line %q holds the interrupt key", line)
			}
		}
	})
}
