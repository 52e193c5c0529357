package pi_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/wire"
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
	{regexp.MustCompile(`^ 127,0,0,1,\d+,\d+$`), " 127,0,0,1,p1,p2"},
	{regexp.MustCompile(`^ \|1\|127\.0\.0\.1\|\d+\|$`), " |1|127.0.0.1|port|"},
}

// TestTranscripts runs each testdata/transcripts/*.txt file against a fresh
// session: "> line" is sent, the "< line"s after it are the expected reply
// in wire form. A run of "| line"s is sent in one write, as a pipelining
// client does, and the "< line"s after the run are every reply to them, in
// order (preliminary replies included). Run with -update to rewrite the
// files from the server.
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
		if strings.HasPrefix(line, "| ") {
			var cmds []string
			for ; i < len(lines) && strings.HasPrefix(lines[i], "| "); i++ {
				cmds = append(cmds, strings.TrimPrefix(lines[i], "| "))
				out.WriteString(lines[i] + "\n")
			}
			var want []string
			for ; i < len(lines) && strings.HasPrefix(lines[i], "< "); i++ {
				want = append(want, strings.TrimPrefix(lines[i], "< "))
			}
			i--
			got := renderPipelined(c, cmds)
			for _, g := range got {
				out.WriteString("< " + g + "\n")
			}
			if !*update && strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s:%d: pipelined %q\n got: %q\nwant: %q", file, i+1, cmds, got, want)
			}
			continue
		}
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
	return normalise(c.read())
}

// renderPipelined sends cmds in one write and returns all their replies
// as wire lines, normalised: it reads until each command has had a final
// reply.
func renderPipelined(c *ctl, cmds []string) []string {
	c.send(strings.Join(cmds, "\r\n"))
	var got []string
	for range cmds {
		for _, r := range c.readUntilFinal() {
			got = append(got, normalise(r)...)
		}
	}
	return got
}

func normalise(r wire.Reply) []string {
	wireForm := strings.TrimSuffix(string(r.AppendWire(nil)), "\r\n")
	got := strings.Split(wireForm, "\r\n")
	for i := range got {
		for _, v := range volatile {
			got[i] = v.re.ReplaceAllString(got[i], v.repl)
		}
	}
	return got
}
