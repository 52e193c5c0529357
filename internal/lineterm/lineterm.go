// Package lineterm reads the command lines of ferry shell on a raw
// terminal: line editing, history and Tab completion. It is its own
// package so that its fuzz target runs in a small test binary.
package lineterm

// The terminal side of ferry shell. golang.org/x/term's Terminal edits
// the lines: the cursor and Emacs keys, Up/Down through a History,
// bracketed paste, and Write, which prints above the prompt and redraws
// the line. Around it sit the parts it lacks:
//
//   - Ctrl-C. ReadLine ends with io.EOF on Ctrl-C as on Ctrl-D
//     (golang/go#62385), drops the echo of the keys read with it, and
//     sees the same Ctrl-C again on every later call. So Terminal never
//     gets one: KeyReader turns it into a call of the shell's interrupt
//     while a command runs, and at the prompt into interruptKey and Enter,
//     which LineTerm shows as "^C" and returns as ErrInterrupted.
//   - Input Terminal cannot parse. It takes an ESC and the bytes up to
//     the next letter or '~' as one key, so the keys typed after a stray
//     ESC are lost, and a sequence without that end fills its 256-byte
//     buffer, after which ReadLine spins on empty reads. An invalid UTF-8
//     byte holds back the keys read with it until the next read.
//     KeyReader passes on only complete key sequences and valid UTF-8
//     (cleanKeys).
//   - Key sequences Terminal does not know (Home and End as ESC [1~ and
//     ESC [4~, ESC O arrows, Alt-B/F, Ctrl-arrows, Alt-Backspace), which
//     KeyReader rewrites into ones it does.
//   - Tab completion with a candidate list, through AutoCompleteCallback.
//   - A bounded history kept in a file.
//   - Raw mode that keeps output processing (makeRaw).

import (
	"bufio"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/ferrygrid/ferry/internal/atomicfile"
)

// ErrInterrupted is LineTerm.ReadLine's error for a line abandoned with
// Ctrl-C.
var ErrInterrupted = errors.New("interrupted")

// interruptKey stands for a Ctrl-C typed at the prompt: a private-use
// rune no keyboard sends, which reaches AutoCompleteCallback like any
// other key.
const interruptKey = '\ue003'

// keyAliases rewrites the key sequences that x/term's Terminal does not
// know into ones it does, and a Ctrl-C at the prompt into interruptKey and
// Enter.
var keyAliases = strings.NewReplacer(
	"\x03", string(interruptKey)+"\r",
	"\x1b[1~", "\x1b[H", "\x1b[7~", "\x1b[H", "\x1bOH", "\x1b[H", // Home
	"\x1b[4~", "\x1b[F", "\x1b[8~", "\x1b[F", "\x1bOF", "\x1b[F", // End
	"\x1bOA", "\x1b[A", "\x1bOB", "\x1b[B", "\x1bOC", "\x1b[C", "\x1bOD", "\x1b[D",
	"\x1b[1;5D", "\x1b[1;3D", "\x1bb", "\x1b[1;3D", "\x1bB", "\x1b[1;3D", // a word left
	"\x1b[1;5C", "\x1b[1;3C", "\x1bf", "\x1b[1;3C", "\x1bF", "\x1b[1;3C", // a word right
	"\x1b\x7f", "\x17", "\x1b\x08", "\x17", // Alt-Backspace: the word before
)

// KeyReader reads a raw terminal in its own goroutine and hands the bytes
// to Terminal, cleaned by cleanKeys and rewritten by keyAliases. While a
// command runs (Busy), Ctrl-C calls intr instead of reaching Terminal.
type KeyReader struct {
	// Busy says a command runs: Ctrl-C then calls intr.
	Busy atomic.Bool

	r       io.Reader
	ch      chan []byte
	pending []byte // read by Read only
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// NewKeyReader starts reading r; intr is called on Ctrl-C while Busy.
func NewKeyReader(r io.Reader, intr func()) *KeyReader {
	k := &KeyReader{r: r, ch: make(chan []byte, 16), done: make(chan struct{})}
	k.wg.Go(func() {
		defer close(k.ch)
		var cut []byte // a key sequence cut at the end of the last read
		for {
			buf := make([]byte, 256)
			n, err := r.Read(buf)
			b := buf[:n]
			if k.Busy.Load() && slices.Contains(b, 3) {
				intr()
				b = slices.DeleteFunc(b, func(c byte) bool { return c == 3 })
			}
			b, cut = cleanKeys(append(cut, b...))
			if len(b) > 0 {
				select {
				case k.ch <- []byte(keyAliases.Replace(string(b))):
				case <-k.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	return k
}

// maxEscape bounds the length of a key sequence.
const maxEscape = 32

// cleanKeys returns the keys of b that Terminal can parse, and the key
// sequence or rune cut short at the end of b, to be read again with the
// next bytes. It drops invalid UTF-8, interruptKey, escape sequences that
// do not end in a letter or '~' (Terminal would read on to the next
// letter), and ESC O sequences that are not keyAliases (Terminal takes
// the O for the end).
func cleanKeys(b []byte) (keys, cut []byte) {
	keys = make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] == 0x1b {
			n, keep := escapeLen(b[i:])
			if n == 0 {
				return keys, slices.Clone(b[i:])
			}
			if keep {
				keys = append(keys, b[i:i+n]...)
			}
			i += n
			continue
		}
		if !utf8.FullRune(b[i:]) {
			return keys, slices.Clone(b[i:])
		}
		r, n := utf8.DecodeRune(b[i:])
		if (r != utf8.RuneError || n > 1) && r != interruptKey {
			keys = append(keys, b[i:i+n]...)
		}
		i += n
	}
	return keys, nil
}

// escapeLen measures the escape sequence at the start of b: its length n,
// 0 when b ends inside it, and whether Terminal can take it.
func escapeLen(b []byte) (n int, keep bool) {
	isEnd := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '~' }
	if len(b) < 2 {
		return 0, false
	}
	switch c := b[1]; {
	case c == '[':
		// CSI: parameter and intermediate bytes, then a final byte.
		for i := 2; i < min(len(b), maxEscape); i++ {
			switch c := b[i]; {
			case c >= 0x20 && c <= 0x3f:
			case c >= 0x40 && c <= 0x7e:
				return i + 1, isEnd(c)
			default:
				return i, false
			}
		}
		if len(b) >= maxEscape {
			return maxEscape, false
		}
		return 0, false
	case c == 'O':
		// SS3: one final byte.
		if len(b) < 3 {
			return 0, false
		}
		return 3, strings.IndexByte("ABCDHF", b[2]) >= 0
	case c == 0x7f || c == 0x08:
		return 2, true // Alt-Backspace
	case c >= 0x20 && c < 0x7f:
		return 2, isEnd(c) // Alt and a key
	}
	return 1, false // a lone ESC before a control byte or ESC
}

func (k *KeyReader) Read(p []byte) (int, error) {
	if len(k.pending) == 0 {
		b, ok := <-k.ch
		if !ok {
			return 0, io.EOF
		}
		k.pending = b
	}
	n := copy(p, k.pending)
	k.pending = k.pending[n:]
	return n, nil
}

// Stop ends the reading goroutine when the reader supports deadlines (a
// terminal opened by the program does; the process's standard input
// usually not, and its reader ends with the process).
func (k *KeyReader) Stop() {
	k.once.Do(func() { close(k.done) })
	if d, ok := k.r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Now()) == nil {
		k.wg.Wait()
		d.SetReadDeadline(time.Time{})
	}
}

// History is a bounded list of entered lines, oldest first.
type History struct {
	max   int
	lines []string
}

// NewHistory returns an empty history keeping at most limit lines (at
// least 1).
func NewHistory(limit int) *History { return &History{max: max(limit, 1)} }

// Add appends line unless it is blank or repeats the last line; the
// oldest lines are dropped beyond the bound.
func (h *History) Add(line string) {
	if strings.TrimSpace(line) == "" || strings.ContainsAny(line, "\r\n") {
		return
	}
	if n := len(h.lines); n > 0 && h.lines[n-1] == line {
		return
	}
	h.lines = append(h.lines, line)
	if over := len(h.lines) - h.max; over > 0 {
		h.lines = append(h.lines[:0], h.lines[over:]...)
	}
}

// Load adds the lines of the history file name; a missing file is no
// error.
func (h *History) Load(name string) error {
	f, err := os.Open(name)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		h.Add(sc.Text())
	}
	return sc.Err()
}

// Save replaces the history file name (mode 0600: commands may name
// private paths) with the lines kept, through a temporary file.
func (h *History) Save(name string) error {
	var b strings.Builder
	for _, l := range h.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return atomicfile.Write(name, []byte(b.String()))
}

// Completer proposes completions for the text before the cursor, head.
// Each candidate replaces head[start:]. display, when not nil, holds the
// names to list for the candidates when they are ambiguous (the same
// length as candidates); otherwise the candidates themselves are listed.
type Completer func(head string) (start int, candidates, display []string)

// LineTerm reads the shell's lines with x/term's Terminal. It is the
// Terminal's History (which ReadLine adds every line to): it keeps what
// hist keeps, less the lines abandoned with Ctrl-C. Only one goroutine
// calls ReadLine; Resize may be called from any.
type LineTerm struct {
	t    *term.Terminal
	out  io.Writer // the screen, for what Terminal does not draw
	hist *History

	// Complete, when not nil, is called on Tab.
	Complete Completer

	// Size returns the terminal's size; nil, an error or a width below
	// 10 means 80x24.
	Size func() (width, height int, err error)

	// abandoned says the line being read ended with Ctrl-C; only
	// Terminal.ReadLine's callbacks and ReadLine touch it.
	abandoned bool
}

// NewLineTerm returns a LineTerm reading keys from keys and drawing on
// out, which must be a terminal in raw mode.
func NewLineTerm(keys io.Reader, out io.Writer, hist *History) *LineTerm {
	lt := &LineTerm{out: out, hist: hist}
	lt.t = term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{keys, out}, "")
	lt.t.History = lt
	lt.t.AutoCompleteCallback = lt.key
	return lt
}

// Terminal is the x/term Terminal that edits the lines: writing to it
// prints above the prompt.
func (lt *LineTerm) Terminal() *term.Terminal { return lt.t }

// ReadLine shows prompt and returns the line the user enters. It returns
// io.EOF at the end of the input or on Ctrl-D on an empty line, and
// ErrInterrupted on Ctrl-C. A pasted line counts as typed.
func (lt *LineTerm) ReadLine(prompt string) (string, error) {
	lt.t.SetPrompt(prompt)
	lt.Resize()
	line, err := lt.t.ReadLine()
	abandoned := lt.abandoned || strings.ContainsRune(line, interruptKey)
	lt.abandoned = false
	switch {
	case err == io.EOF:
		// Terminal leaves the cursor after the prompt.
		io.WriteString(lt.out, "\r\n")
		return "", err
	case err != nil && err != term.ErrPasteIndicator:
		return "", err
	case abandoned:
		// A Ctrl-C in a bracketed paste skips the callback and leaves
		// interruptKey on the line.
		return "", ErrInterrupted
	}
	return line, nil
}

// Resize tells Terminal the size of the screen.
func (lt *LineTerm) Resize() {
	w, h := lt.dimensions()
	lt.t.SetSize(w, h)
}

func (lt *LineTerm) dimensions() (width, height int) {
	if lt.Size != nil {
		if w, h, err := lt.Size(); err == nil && w >= 10 {
			return w, max(h, 1)
		}
	}
	return 80, 24
}

// Add is called by ReadLine with each line it returns.
func (lt *LineTerm) Add(line string) {
	if !lt.abandoned && !strings.ContainsRune(line, interruptKey) {
		lt.hist.Add(line)
	}
}

// Len is the number of lines in the history.
func (lt *LineTerm) Len() int { return len(lt.hist.lines) }

// At returns a line of the history, 0 being the newest.
func (lt *LineTerm) At(i int) string { return lt.hist.lines[len(lt.hist.lines)-1-i] }

// key is the Terminal's AutoCompleteCallback: Tab completes, interruptKey
// ends the line with "^C".
func (lt *LineTerm) key(line string, pos int, key rune) (string, int, bool) {
	switch key {
	case interruptKey:
		lt.abandoned = true
		line += "^C"
		return line, len(line), true
	case '\t':
		return lt.completeAt(line, pos)
	}
	return "", 0, false
}

// completeAt completes the text before the cursor: the one candidate (and
// a space unless it ends in '/'), or the candidates' longest common
// prefix; when that adds nothing, the candidates are listed above the
// prompt.
func (lt *LineTerm) completeAt(line string, pos int) (string, int, bool) {
	if lt.Complete == nil {
		return "", 0, false
	}
	head := line[:pos]
	start, cands, display := lt.Complete(head)
	if len(cands) == 0 || start < 0 || start > len(head) {
		return "", 0, false
	}
	word := head[start:]
	repl := cands[0]
	if len(cands) > 1 {
		repl = commonPrefix(cands)
	} else if !strings.HasSuffix(repl, "/") {
		repl += " "
	}
	if len(repl) < len(word) || repl == word && len(cands) > 1 {
		if len(display) != len(cands) {
			display = cands
		}
		width, _ := lt.dimensions()
		lt.t.Write([]byte(columns(display, width)))
		return "", 0, false
	}
	head = head[:start] + repl
	return head + line[pos:], len(head), true
}

// commonPrefix is the longest common prefix of ss, cut at a rune boundary.
func commonPrefix(ss []string) string {
	p := ss[0]
	for _, s := range ss[1:] {
		i := 0
		for i < len(p) && i < len(s) && p[i] == s[i] {
			i++
		}
		p = p[:i]
	}
	for len(p) > 0 && !utf8.ValidString(p) {
		p = p[:len(p)-1]
	}
	return p
}

// columns lays names out in columns, down then across, for a screen width
// columns wide; each row ends in "\n".
func columns(names []string, width int) string {
	colw := 0
	for _, n := range names {
		colw = max(colw, utf8.RuneCountInString(n)+2)
	}
	cols := max(width/max(colw, 1), 1)
	rows := (len(names) + cols - 1) / cols
	var b strings.Builder
	for r := range rows {
		for c := range cols {
			i := c*rows + r
			if i >= len(names) {
				break
			}
			n := names[i]
			b.WriteString(n)
			if c < cols-1 && (c+1)*rows+r < len(names) {
				b.WriteString(strings.Repeat(" ", colw-utf8.RuneCountInString(n)))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
