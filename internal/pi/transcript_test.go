package pi_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata transcripts with the replies the server gives")

// volatile parts of replies, replaced before comparison.
var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\(\d+,\d+,\d+,\d+,\d+,\d+\)`), "(h1,h2,h3,h4,p1,p2)"},
	{regexp.MustCompile(`\(\|\|\|\d+\|\)`), "(|||port|)"},
	{regexp.MustCompile(`from 127\.0\.0\.1:\d+`), "from 127.0.0.1:port"},
}

// TestTranscripts runs each testdata/transcripts/*.txt file against a fresh
// session: "> line" is sent, the "< line"s after it are the expected reply
// in wire form. Run with -update to rewrite the files from the server.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runTranscript(t, file)
		})
	}
}

func runTranscript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, config(seed(t)))
	c := dial(t, addr)
	var out strings.Builder
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, "> ") {
			if !strings.HasPrefix(line, "< ") {
				out.WriteString(line + "\n") // comments and blank lines
			}
			continue
		}
		var want []string
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "< ") {
			i++
			want = append(want, strings.TrimPrefix(lines[i], "< "))
		}
		cmd := strings.TrimPrefix(line, "> ")
		got := renderReply(c, cmd)
		out.WriteString(line + "\n")
		for _, g := range got {
			out.WriteString("< " + g + "\n")
		}
		if !*update && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s\n got: %q\nwant: %q", file, i+1, cmd, got, want)
		}
	}
	if *update {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// renderReply sends cmd and returns its reply as wire lines, normalised.
func renderReply(c *ctl, cmd string) []string {
	c.send(cmd)
	r := c.read()
	wireForm := strings.TrimSuffix(string(r.AppendWire(nil)), "\r\n")
	got := strings.Split(wireForm, "\r\n")
	for i := range got {
		for _, v := range volatile {
			got[i] = v.re.ReplaceAllString(got[i], v.repl)
		}
	}
	return got
}
