package main

// Words of ferry shell command lines: internal/shellwords splits them,
// escapes names for completion and finds the word under the cursor.

import (
	"strings"

	"github.com/ferrygrid/ferry/internal/shellwords"
)

// splitWords splits a command line into words; an open quote or a
// backslash at the end is an error.
func splitWords(line string) ([]string, error) { return shellwords.Split(line) }

// partialWord describes the word being typed at the end of head: where it
// starts in head, its text with quotes and escapes undone, and how many
// complete words come before it.
func partialWord(head string) (start int, word string, index int) {
	return shellwords.Partial(head)
}

// escapeWord makes s one word for splitWords.
func escapeWord(s string) string { return shellwords.Escape(s) }

// hasGlob reports whether s holds a wildcard of path.Match.
func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }
