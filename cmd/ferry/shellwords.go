package main

// Words of ferry shell command lines: splitting with quotes and
// backslashes, escaping names for completion, and the word under the
// cursor.

import (
	"errors"
	"strings"
)

// splitWords splits a command line into words at unquoted white space.
// 'single quotes' keep everything literally, "double quotes" allow \" and
// \\, and a backslash outside quotes takes the next character literally.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte // 0, '\'' or '"'
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case quote == '"':
			switch {
			case ch == '"':
				quote = 0
			case ch == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\'):
				i++
				cur.WriteByte(line[i])
			default:
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, inWord = ch, true
		case ch == '\\':
			if i+1 == len(line) {
				return nil, errors.New("a backslash ends the line")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// partialWord describes the word being typed at the end of head: where it
// starts in head, its text with quotes and escapes undone, and how many
// complete words come before it.
func partialWord(head string) (start int, word string, index int) {
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(head); i++ {
		ch := head[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case quote == '"':
			switch {
			case ch == '"':
				quote = 0
			case ch == '\\' && i+1 < len(head) && (head[i+1] == '"' || head[i+1] == '\\'):
				i++
				cur.WriteByte(head[i])
			default:
				cur.WriteByte(ch)
			}
		case ch == ' ' || ch == '\t':
			if inWord {
				index++
				cur.Reset()
				inWord = false
			}
		default:
			if !inWord {
				start, inWord = i, true
			}
			switch ch {
			case '\'', '"':
				quote = ch
			case '\\':
				if i+1 < len(head) {
					i++
					cur.WriteByte(head[i])
				}
			default:
				cur.WriteByte(ch)
			}
		}
	}
	if !inWord {
		start = len(head)
	}
	return start, cur.String(), index
}

// escapeWord makes s one word for splitWords, with backslashes before
// the characters that would split or quote it.
func escapeWord(s string) string {
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

// hasGlob reports whether s holds a wildcard of path.Match.
func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }
