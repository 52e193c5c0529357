// Package lineedit is a small terminal line editor for interactive
// programs such as ferry shell: one editable line with cursor movement,
// Emacs-style control keys, history and tab completion.
//
// An Editor reads key bytes from an io.Reader and writes VT100 escape
// sequences to an io.Writer, so it is driven by plain byte sequences in
// tests. Putting the terminal into raw mode is the caller's business (see
// MakeRaw).
//
// Keys: printable text inserts; Enter ends the line; Ctrl-A/Home and
// Ctrl-E/End go to the start and end; Ctrl-B/Left and Ctrl-F/Right move
// by a character; Alt-B and Alt-F by a word; Backspace and Ctrl-H delete
// before the cursor, Delete at it; Ctrl-D deletes at the cursor, or on an
// empty line ends the input (io.EOF); Ctrl-U kills to the start, Ctrl-K to
// the end, Ctrl-W the word before the cursor; Ctrl-Y yanks what was last
// killed; Ctrl-P/Up and Ctrl-N/Down walk the history; Ctrl-L redraws;
// Ctrl-C abandons the line (ErrInterrupted); Tab completes.
package lineedit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInterrupted is returned by ReadLine when the user types Ctrl-C.
var ErrInterrupted = errors.New("lineedit: interrupted")

// Completer proposes completions for the text before the cursor, head.
// Each candidate replaces head[start:]. Display, when not nil, holds the
// names to list for the candidates when they are ambiguous (the same
// length as candidates); otherwise the candidates themselves are listed.
type Completer func(head string) (start int, candidates, display []string)

// Editor edits one line at a time. The zero value is not usable; use New.
type Editor struct {
	in  *bufio.Reader
	out io.Writer

	// History, when not nil, is walked with Up/Down; ReadLine does not add
	// to it (the caller decides which lines are worth keeping).
	History *History

	// Complete, when not nil, is called on Tab.
	Complete Completer

	// Width returns the terminal's width in columns; nil or a result
	// below 10 means 80.
	Width func() int

	// state of the line being edited
	prompt string
	buf    []rune
	pos    int
	killed []rune
	hist   int    // index into History while walking it; len = the new line
	saved  []rune // the new line while walking the history
	errOut error  // first write error
}

// New returns an Editor reading keys from in and drawing on out.
func New(in io.Reader, out io.Writer) *Editor {
	return &Editor{in: bufio.NewReader(in), out: out}
}

// ReadLine shows prompt and returns the line the user enters, without the
// line ending. It returns io.EOF at the end of the input or on Ctrl-D on
// an empty line, and ErrInterrupted on Ctrl-C.
func (e *Editor) ReadLine(prompt string) (string, error) {
	e.prompt, e.buf, e.pos, e.saved = prompt, e.buf[:0], 0, nil
	e.hist = 0
	if e.History != nil {
		e.hist = e.History.Len()
	}
	e.refresh()
	for {
		r, _, err := e.in.ReadRune()
		if err != nil {
			if err == io.EOF && len(e.buf) > 0 {
				// An unterminated last line still counts.
				e.write("\r\n")
				return string(e.buf), e.errOut
			}
			return "", err
		}
		switch r {
		case '\r', '\n':
			if r == '\r' {
				e.skipLF()
			}
			e.pos = len(e.buf)
			e.refresh()
			e.write("\r\n")
			return string(e.buf), e.errOut
		case ctrl('A'):
			e.pos = 0
		case ctrl('E'):
			e.pos = len(e.buf)
		case ctrl('B'):
			e.pos = max(e.pos-1, 0)
		case ctrl('F'):
			e.pos = min(e.pos+1, len(e.buf))
		case ctrl('H'), 0x7f:
			if e.pos > 0 {
				e.buf = append(e.buf[:e.pos-1], e.buf[e.pos:]...)
				e.pos--
			}
		case ctrl('D'):
			if len(e.buf) == 0 {
				e.write("\r\n")
				return "", io.EOF
			}
			e.deleteAt()
		case ctrl('U'):
			e.kill(0, e.pos)
		case ctrl('K'):
			e.kill(e.pos, len(e.buf))
		case ctrl('W'):
			e.kill(e.wordStart(), e.pos)
		case ctrl('Y'):
			e.insert(e.killed)
		case ctrl('P'):
			e.historyMove(-1)
		case ctrl('N'):
			e.historyMove(1)
		case ctrl('L'):
			e.write("\x1b[H\x1b[2J")
		case ctrl('C'):
			e.pos = len(e.buf)
			e.refresh()
			e.write("^C\r\n")
			return "", ErrInterrupted
		case '\t':
			e.complete()
		case 0x1b:
			e.escape()
		default:
			if !unicode.IsControl(r) && r != utf8.RuneError {
				e.insert([]rune{r})
			}
		}
		e.refresh()
	}
}

func ctrl(c byte) rune { return rune(c & 0x1f) }

// skipLF drops the '\n' of a "\r\n" line ending that is already buffered.
func (e *Editor) skipLF() {
	if e.in.Buffered() > 0 {
		if b, err := e.in.Peek(1); err == nil && b[0] == '\n' {
			e.in.ReadByte()
		}
	}
}

// escape handles the bytes after ESC: CSI and SS3 key sequences, and Alt
// (Meta) combinations.
func (e *Editor) escape() {
	b, err := e.in.ReadByte()
	if err != nil {
		return
	}
	switch b {
	case '[':
		// CSI: parameter bytes, then a final byte in 0x40..0x7e.
		var params []byte
		for range 16 {
			c, err := e.in.ReadByte()
			if err != nil {
				return
			}
			if c >= 0x40 && c <= 0x7e {
				e.csi(string(params), c)
				return
			}
			params = append(params, c)
		}
	case 'O':
		c, err := e.in.ReadByte()
		if err == nil {
			e.csi("", c)
		}
	case 'b', 'B':
		e.pos = e.wordStart()
	case 'f', 'F':
		e.pos = e.wordEnd()
	case 'd', 'D':
		e.kill(e.pos, e.wordEnd())
	case 0x7f, 8:
		e.kill(e.wordStart(), e.pos)
	}
}

// csi acts on a cursor-key sequence.
func (e *Editor) csi(params string, final byte) {
	switch final {
	case 'A':
		e.historyMove(-1)
	case 'B':
		e.historyMove(1)
	case 'C':
		if strings.HasSuffix(params, ";5") || strings.HasSuffix(params, ";3") {
			e.pos = e.wordEnd()
		} else {
			e.pos = min(e.pos+1, len(e.buf))
		}
	case 'D':
		if strings.HasSuffix(params, ";5") || strings.HasSuffix(params, ";3") {
			e.pos = e.wordStart()
		} else {
			e.pos = max(e.pos-1, 0)
		}
	case 'H':
		e.pos = 0
	case 'F':
		e.pos = len(e.buf)
	case '~':
		switch params {
		case "1", "7":
			e.pos = 0
		case "4", "8":
			e.pos = len(e.buf)
		case "3":
			e.deleteAt()
		}
	}
}

func (e *Editor) deleteAt() {
	if e.pos < len(e.buf) {
		e.buf = append(e.buf[:e.pos], e.buf[e.pos+1:]...)
	}
}

func (e *Editor) insert(rs []rune) {
	e.buf = append(e.buf[:e.pos], append(append([]rune(nil), rs...), e.buf[e.pos:]...)...)
	e.pos += len(rs)
}

// kill removes buf[from:to] into the kill buffer.
func (e *Editor) kill(from, to int) {
	if from >= to {
		return
	}
	e.killed = append(e.killed[:0], e.buf[from:to]...)
	e.buf = append(e.buf[:from], e.buf[to:]...)
	e.pos = from
}

// wordStart is where the word before the cursor starts (spaces before it
// skipped), as Ctrl-W and Alt-B see words.
func (e *Editor) wordStart() int {
	i := e.pos
	for i > 0 && unicode.IsSpace(e.buf[i-1]) {
		i--
	}
	for i > 0 && !unicode.IsSpace(e.buf[i-1]) {
		i--
	}
	return i
}

func (e *Editor) wordEnd() int {
	i := e.pos
	for i < len(e.buf) && unicode.IsSpace(e.buf[i]) {
		i++
	}
	for i < len(e.buf) && !unicode.IsSpace(e.buf[i]) {
		i++
	}
	return i
}

// historyMove steps through the history: -1 older, +1 newer.
func (e *Editor) historyMove(d int) {
	if e.History == nil {
		return
	}
	n := e.History.Len()
	i := e.hist + d
	if i < 0 || i > n {
		return
	}
	if e.hist == n {
		e.saved = append(e.saved[:0], e.buf...)
	}
	e.hist = i
	if i == n {
		e.buf = append(e.buf[:0], e.saved...)
	} else {
		e.buf = append(e.buf[:0], []rune(e.History.At(i))...)
	}
	e.pos = len(e.buf)
}

// complete inserts the completion of the text before the cursor: the one
// candidate (and a space unless it ends in '/'), or the candidates' longest
// common prefix; when that adds nothing, the candidates are listed.
func (e *Editor) complete() {
	if e.Complete == nil {
		return
	}
	head := string(e.buf[:e.pos])
	start, cands, display := e.Complete(head)
	if len(cands) == 0 || start < 0 || start > len(head) {
		return
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
		e.list(display)
		return
	}
	tail := e.buf[e.pos:]
	e.buf = append([]rune(head[:start]+repl), tail...)
	e.pos = utf8.RuneCountInString(head[:start] + repl)
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

// list prints names in columns below the line; the line is redrawn after.
func (e *Editor) list(names []string) {
	width := e.width()
	colw := 0
	for _, n := range names {
		colw = max(colw, utf8.RuneCountInString(n)+2)
	}
	cols := max(width/max(colw, 1), 1)
	rows := (len(names) + cols - 1) / cols
	var b strings.Builder
	b.WriteString("\r\n")
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
		b.WriteString("\r\n")
	}
	e.write(b.String())
}

func (e *Editor) width() int {
	if e.Width != nil {
		if w := e.Width(); w >= 10 {
			return w
		}
	}
	return 80
}

// refresh redraws the line. A line wider than the terminal scrolls
// sideways so that the cursor stays visible.
func (e *Editor) refresh() {
	cols := e.width() - 1
	prompt := []rune(e.prompt)
	if len(prompt) > cols/2 {
		prompt = append([]rune("…"), prompt[len(prompt)-cols/2+1:]...)
	}
	avail := cols - len(prompt)
	from := 0
	if e.pos > avail {
		from = e.pos - avail
	}
	to := min(len(e.buf), from+avail)
	var b strings.Builder
	b.WriteString("\r")
	b.WriteString(string(prompt))
	b.WriteString(string(e.buf[from:to]))
	b.WriteString("\x1b[K")
	if back := to - e.pos; back > 0 {
		fmt.Fprintf(&b, "\x1b[%dD", back)
	}
	e.write(b.String())
}

func (e *Editor) write(s string) {
	if _, err := io.WriteString(e.out, s); err != nil && e.errOut == nil {
		e.errOut = err
	}
}
