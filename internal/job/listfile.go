package job

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// URLPair is one line of a URL list file (-f): a source and a
// destination URL.
type URLPair struct {
	Src, Dst string
	Line     int // 1-based line number, for messages
}

// maxListLine bounds a line of a list file.
const maxListLine = 64 << 10

// ParseList reads a URL list in globus-url-copy's -f format: one
// "SRC DST" pair per line, separated by spaces or tabs; a URL holding
// spaces is enclosed in double quotes; blank lines and lines whose first
// non-blank character is # are ignored.
func ParseList(r io.Reader) ([]URLPair, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxListLine)
	var out []URLPair
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields, err := splitQuoted(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(fields) > 2 && gctDumpExtras(fields[2:]) {
			// A line of a dump file globus-url-copy wrote (-df, -do):
			// the pair is followed by its ranges and facts. The whole
			// file is copied again.
			fields = fields[:2]
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want a source and a destination URL, found %d fields", n, len(fields))
		}
		out = append(out, URLPair{Src: fields[0], Dst: fields[1], Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// gctDumpExtras reports whether the fields after a pair are those of a
// dump file of globus-url-copy: byte ranges ("0,-1") and optionally
// facts ("size=2;modify=1795812124;mode=0644;").
func gctDumpExtras(extra []string) bool {
	if len(extra) > 2 || !strings.Contains(extra[0], ",") || strings.Trim(extra[0], "0123456789,:-") != "" {
		return false
	}
	return len(extra) == 1 || strings.Contains(extra[1], "=")
}

// splitQuoted splits a line at blanks, keeping double-quoted fields
// whole (the quotes are removed; there are no escapes, as in
// globus-url-copy). A quote elsewhere than at the start of a field is an
// error.
func splitQuoted(line string) ([]string, error) {
	var out []string
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			end := strings.IndexByte(line[i+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote")
			}
			out = append(out, line[i+1:i+1+end])
			i += end + 2
			if i < len(line) && line[i] != ' ' && line[i] != '\t' {
				return nil, fmt.Errorf("text right after a closing quote")
			}
		default:
			j := i
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				if line[j] == '"' {
					// A quote opens a field only at its start; a URL
					// writes one as %22.
					return nil, fmt.Errorf("a quote inside a field")
				}
				j++
			}
			out = append(out, line[i:j])
			i = j
		}
	}
	return out, nil
}

// quoteURL quotes a URL for a list file when it holds blanks.
func quoteURL(s string) string {
	if s == "" || strings.ContainsAny(s, " \t#") {
		return `"` + s + `"`
	}
	return s
}

// WriteList writes pairs in the format ParseList reads (-df): the
// failed copies of a job, to be run again with -f. Entries without a
// source (failed deletions) are left out.
func WriteList(w io.Writer, results []Result) error {
	bw := bufio.NewWriter(w)
	for _, r := range results {
		if r.Pair.Src == (Loc{}) || r.Pair.Dst == (Loc{}) {
			continue
		}
		fmt.Fprintf(bw, "%s %s\n", quoteURL(r.Pair.Src.URL()), quoteURL(r.Pair.Dst.URL()))
	}
	return bw.Flush()
}
