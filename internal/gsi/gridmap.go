package gsi

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// GridMap is a parsed grid-mapfile: distinguished names mapped to local
// accounts. It is immutable and safe for concurrent use.
type GridMap struct {
	entries []gridMapEntry
}

type gridMapEntry struct {
	dn       string // normalised: as gridmapDN returns
	accounts []string
}

// ErrGridMapCutShort reports a grid-mapfile whose last line has no
// newline.
var ErrGridMapCutShort = errors.New("gsi: grid-mapfile does not end with a newline: cut short?")

// LoadGridMap reads and parses a grid-mapfile. A file that is not empty
// must end with a newline (ErrGridMapCutShort).
func LoadGridMap(path string) (*GridMap, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gsi: grid-mapfile: %w", err)
	}
	// A file written halfway may end inside a line, and a cut-short list
	// of accounts ("alice,bobby" cut to "alice,bob") maps the DN to an
	// account it was never given.
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("%w (in %s)", ErrGridMapCutShort, path)
	}
	g, err := ParseGridMap(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return g, nil
}

// ParseGridMap parses grid-mapfile lines of the form
//
//	"/C=US/O=Grid/CN=Jane Doe" jane,jdoe
//
// The DN is double-quoted when it contains blanks; inside it a backslash
// escapes the next character and \xHH stands for a byte. Accounts are
// separated by commas or blanks; the first is the default. Blank lines and
// lines starting with '#' are ignored. The first line for a DN wins.
func ParseGridMap(data []byte) (*GridMap, error) {
	g := &GridMap{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimLeft(strings.TrimSuffix(line, "\r"), " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		var rawDN, rest string
		if line[0] == '"' {
			end := -1
			for i := 1; i < len(line); i++ {
				if line[i] == '\\' {
					i++
					continue
				}
				if line[i] == '"' {
					end = i
					break
				}
			}
			if end < 0 {
				return nil, fmt.Errorf("gsi: grid-mapfile line %d: missing closing quote", n+1)
			}
			rawDN, rest = line[1:end], line[end+1:]
		} else {
			i := strings.IndexAny(line, " \t")
			if i < 0 {
				return nil, fmt.Errorf("gsi: grid-mapfile line %d: no account after the DN", n+1)
			}
			rawDN, rest = line[:i], line[i:]
		}
		accounts := strings.FieldsFunc(rest, func(r rune) bool {
			return r == ',' || r == ' ' || r == '\t'
		})
		if len(accounts) == 0 {
			return nil, fmt.Errorf("gsi: grid-mapfile line %d: no account after the DN", n+1)
		}
		if rawDN == "" {
			return nil, fmt.Errorf("gsi: grid-mapfile line %d: empty DN", n+1)
		}
		g.entries = append(g.entries, gridMapEntry{dn: gridmapDN(unescapeGridmapDN(rawDN)), accounts: accounts})
	}
	return g, nil
}

// unescapeGridmapDN undoes the escapes inside a quoted DN: "\c" is c and
// "\xHH" the byte HH; bytes outside printable ASCII are then written as
// \xHH again, which is the form DN produces.
func unescapeGridmapDN(s string) string {
	const hex = "0123456789ABCDEF"
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			c = s[i]
			if c == 'x' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				c = unhex(s[i+1])<<4 | unhex(s[i+2])
				i += 2
			}
		}
		if c < ' ' || c > '~' {
			sb.WriteString(`\x`)
			sb.WriteByte(hex[c>>4])
			sb.WriteByte(hex[c&15])
		} else {
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// gridmapDN normalises the spellings old tools used for two attribute
// types, so that "/Email=" and "/E=" match "/emailAddress=" and "/USERID="
// matches "/UID=".
func gridmapDN(dn string) string {
	if !strings.Contains(dn, "/E") && !strings.Contains(dn, "/USERID=") {
		return dn
	}
	r := strings.NewReplacer("/Email=", "/emailAddress=", "/E=", "/emailAddress=", "/USERID=", "/UID=")
	return r.Replace(dn)
}

// Lookup returns the accounts a DN (in the form DN returns) maps to, the
// default first.
func (g *GridMap) Lookup(dn string) (accounts []string, ok bool) {
	if g == nil {
		return nil, false
	}
	dn = gridmapDN(dn)
	for _, e := range g.entries {
		if e.dn == dn {
			return append([]string(nil), e.accounts...), true
		}
	}
	return nil, false
}

// Len returns the number of entries.
func (g *GridMap) Len() int {
	if g == nil {
		return 0
	}
	return len(g.entries)
}

// GridMapLine returns a grid-mapfile line mapping dn to accounts, quoted
// and escaped so that ParseGridMap (and GCT) read back the same DN.
func GridMapLine(dn string, accounts ...string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(dn); i++ {
		if dn[i] == '"' || dn[i] == '\\' && !(i+1 < len(dn) && dn[i+1] == 'x') {
			sb.WriteByte('\\')
		}
		sb.WriteByte(dn[i])
	}
	sb.WriteString(`" `)
	sb.WriteString(strings.Join(accounts, ","))
	return sb.String()
}
