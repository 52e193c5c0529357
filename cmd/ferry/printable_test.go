package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/job"
)

// TestRemoteNamesEscaped checks that the ways a server's names and
// replies reach the terminal (ls lines, failure lines, reply text)
// carry no control characters.
func TestRemoteNamesEscaped(t *testing.T) {
	const evil = "x\x1b]0;owned\x07\x1b[2J\u009b31m\xff"
	var out bytes.Buffer
	for _, long := range []bool{false, true} {
		printEntry(&out, client.Entry{Name: evil, Type: "file", Size: 1, Slink: evil}, long)
	}
	s := &shell{cwd: "/d"}
	loc := job.Loc{End: "ftp://h", Path: "/d/" + evil}
	texts := map[string]string{
		"ls":       out.String(),
		"locName":  s.locName(loc),
		"pairText": pairText(job.Pair{Src: loc}),
		"describe": describe(&client.ReplyError{Reply: client.Reply{Code: 550, Lines: []string{evil + ": no such file"}}}),
		"reason":   reason(errors.New(evil)),
	}
	for what, text := range texts {
		text = strings.TrimSuffix(strings.ReplaceAll(text, "\n", ""), "\n")
		for _, r := range text {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0xfffd {
				t.Errorf("%s: %q holds %U", what, text, r)
				break
			}
		}
		if !strings.Contains(text, `x\x1b]0;owned\x07\x1b[2J\u009b31m\xff`) {
			t.Errorf("%s: %q lacks the escaped name", what, text)
		}
	}
}
