// Package shellwords cuts ferry shell command lines into words: splitting
// with quotes and backslashes, escaping names for completion, and the
// word under the cursor. It is its own package so that its fuzz target
// runs in a small test binary.
package shellwords

import (
	"errors"
	"strings"
)

// wordScan is a command line cut into words: at unquoted white space,
// with 'single quotes' keeping everything literally, "double quotes"
// allowing \" and \\, and a backslash outside quotes taking the next
// character literally.
type wordScan struct {
	// words are the words that white space ended.
	words []string
	// last is the word at the end of the line that no white space ended,
	// with quotes and escapes undone; open says there is one.
	last string
	open bool
	// start is where last begins in the line (the line's length when
	// there is none).
	start int
	// quote is the quote left open at the end (0: none), and escape says
	// the line ends in a backslash.
	quote  byte
	escape bool
}

// scan scans line: the one tokenizer of Split (whole command lines) and
// Partial (the line up to the cursor, for completion).
func scan(line string) wordScan {
	var w wordScan
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case w.quote == '\'':
			if ch == '\'' {
				w.quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case w.quote == '"':
			switch {
			case ch == '"':
				w.quote = 0
			case ch == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\'):
				i++
				cur.WriteByte(line[i])
			default:
				cur.WriteByte(ch)
			}
		case ch == ' ' || ch == '\t':
			if w.open {
				w.words = append(w.words, cur.String())
				cur.Reset()
				w.open = false
			}
		default:
			if !w.open {
				w.start, w.open = i, true
			}
			switch ch {
			case '\'', '"':
				w.quote = ch
			case '\\':
				if i+1 == len(line) {
					w.escape = true
				} else {
					i++
					cur.WriteByte(line[i])
				}
			default:
				cur.WriteByte(ch)
			}
		}
	}
	if w.open {
		w.last = cur.String()
	} else {
		w.start = len(line)
	}
	return w
}

// Split splits a command line into words (see wordScan); an open quote
// or a backslash at the end is an error.
func Split(line string) ([]string, error) {
	w := scan(line)
	switch {
	case w.quote != 0:
		return nil, errors.New("unterminated quote")
	case w.escape:
		return nil, errors.New("a backslash ends the line")
	}
	if w.open {
		return append(w.words, w.last), nil
	}
	return w.words, nil
}

// Partial describes the word being typed at the end of head: where it
// starts in head, its text with quotes and escapes undone (an open quote
// or a final backslash tolerated), and how many complete words come
// before it.
func Partial(head string) (start int, word string, index int) {
	w := scan(head)
	return w.start, w.last, len(w.words)
}

// Escape makes s one word for Split, with backslashes before
// the characters that would split or quote it.
func Escape(s string) string {
	if !strings.ContainsAny(s, " \t'\"\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(" \t'\"\\", s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
