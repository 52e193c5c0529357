package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrNotEntry is returned by ParseLISTLine for a line that is not an entry,
// such as ls's "total N" line.
var ErrNotEntry = errors.New("wire: not a listing entry")

// errList is the base of the other LIST parse errors.
var errList = errors.New("wire: bad LIST line")

// sixMonths is how far back ls shows a time of day instead of the year.
const sixMonths = 182*24*time.Hour + 12*time.Hour

// AppendLIST appends e as one "ls -l" line in GCT's column layout, without
// line terminator:
//
//	drwxr-xr-x   2     root     root         4096 Nov 21 19:34 gt
//
// The mode string comes from Type and Mode (0755 for directories, 0777 for
// links and 0644 otherwise when Mode is unknown), the link count is 1, the
// owner and group are Owner and Group, else UID and GID, else "ferry". The
// date is "Jan _2 15:04" when Modify lies in the six months up to now and
// "Jan _2  2006" otherwise, in UTC; an unknown Modify is shown as the Unix
// epoch. A link gets " -> " and its target after the name.
func AppendLIST(b []byte, e Entry, now time.Time) []byte {
	b = appendModeString(b, e.Type, e.Mode)
	size := e.Size
	if size < 0 {
		size = 0
	}
	owner := idName(e.Owner, e.UID)
	group := idName(e.Group, e.GID)
	b = fmt.Appendf(b, " %3d %8s %8s %12d ", 1, owner, group, size)
	t := e.Modify
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	t = t.UTC()
	now = now.UTC()
	if !t.After(now) && now.Sub(t) < sixMonths {
		b = t.AppendFormat(b, "Jan _2 15:04")
	} else {
		b = t.AppendFormat(b, "Jan _2  2006")
	}
	b = append(b, ' ')
	b = append(b, e.Name...)
	if e.Type == "slink" && e.Slink != "" {
		b = append(b, " -> "...)
		b = append(b, e.Slink...)
	}
	return b
}

// idName returns name, else the decimal id, else "ferry".
func idName(name string, id int) string {
	switch {
	case name != "":
		return name
	case id >= 0:
		return strconv.Itoa(id)
	}
	return "ferry"
}

// appendModeString appends the ten-character ls mode string.
func appendModeString(b []byte, typ string, mode int) []byte {
	var c byte = '-'
	def := 0o644
	switch typ {
	case "dir", "cdir", "pdir":
		c, def = 'd', 0o755
	case "slink":
		c, def = 'l', 0o777
	case TypeFIFO:
		c = 'p'
	case TypeSocket:
		c = 's'
	case TypeCharDevice:
		c = 'c'
	case TypeBlockDevice:
		c = 'b'
	}
	if mode < 0 {
		mode = def
	}
	b = append(b, c)
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		ch := byte('-')
		if mode&(1<<(8-i)) != 0 {
			ch = rwx[i]
		}
		if i%3 == 2 {
			// setuid, setgid and sticky bits show in the x columns.
			special := mode&(0o4000>>(i/3)) != 0
			if special {
				s := byte('s')
				if i == 8 {
					s = 't'
				}
				if ch == '-' {
					s -= 'a' - 'A'
				}
				ch = s
			}
		}
		b = append(b, ch)
	}
	return b
}

// parseModeString parses a ten-character ls mode string into type and
// permission bits.
func parseModeString(s string) (typ string, mode int, ok bool) {
	if len(s) != 10 {
		return "", 0, false
	}
	switch s[0] {
	case 'd':
		typ = "dir"
	case 'l':
		typ = "slink"
	case '-':
		typ = "file"
	case 'b', 'c', 'p', 's', 'D':
	default:
		return "", 0, false
	}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		ch := s[1+i]
		switch {
		case ch == '-':
		case ch == rwx[i]:
			mode |= 1 << (8 - i)
		case i%3 == 2 && (ch == 's' && i != 8 || ch == 't' && i == 8):
			mode |= 1<<(8-i) | 0o4000>>(i/3)
		case i%3 == 2 && (ch == 'S' && i != 8 || ch == 'T' && i == 8):
			mode |= 0o4000 >> (i / 3)
		default:
			return "", 0, false
		}
	}
	return typ, mode, true
}

// token is one space-separated field of a line, by byte offsets.
type token struct{ start, end int }

var months = map[string]time.Month{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}

// ParseLISTLine parses one Unix "ls -l" line as FTP servers send it, with
// variable spacing, an optional link count and group, "Mon DD HH:MM" or
// "Mon DD YYYY" dates, names with spaces and "name -> target" for links.
// It sets Type ("file", "dir", "slink", or "" for other kinds), Mode, Size,
// Owner, Group, Name, Slink and Modify (UTC). For the HH:MM form the year is
// chosen so that the date is not after now. A trailing CR (GCT ends LIST
// lines with CR CR LF) is ignored. The "total N" line gives ErrNotEntry.
func ParseLISTLine(line string, now time.Time) (Entry, error) {
	line = strings.TrimRight(line, "\r")
	line = strings.TrimLeft(line, " ")
	if strings.HasPrefix(line, "total ") || line == "total" {
		return Entry{}, ErrNotEntry
	}
	bad := func(what string) (Entry, error) {
		return Entry{}, fmt.Errorf("%w: %s in %q", errList, what, line)
	}
	toks := listTokens(line)
	tok := func(k int) string { return line[toks[k].start:toks[k].end] }
	if len(toks) < 6 {
		return bad("too few fields")
	}
	modeTok := tok(0)
	if len(modeTok) == 11 && strings.ContainsRune("+@.", rune(modeTok[10])) {
		modeTok = modeTok[:10] // ACL or extended-attribute marker
	}
	typ, mode, ok := parseModeString(modeTok)
	if !ok {
		return bad("mode")
	}
	// Find the date: month, day, time or year, preceded by the size.
	for j := 3; j+3 < len(toks) && j <= 8; j++ {
		mon, ok := months[strings.ToLower(tok(j))]
		if !ok || !isDigits(tok(j-1)) {
			continue
		}
		t, ok := listDate(mon, tok(j+1), tok(j+2), now)
		if !ok {
			continue
		}
		size, err := strconv.ParseInt(tok(j-1), 10, 64)
		if err != nil {
			return bad("size")
		}
		e := NewEntry("")
		e.Type, e.Mode, e.Size, e.Modify = typ, mode, size, t
		if e.Owner, e.Group, ok = listOwnerGroup(line, toks[1:j-1]); !ok {
			return bad("owner and group")
		}
		// The name is everything after the one space following the date.
		name := line[toks[j+2].end+1:]
		if name == "" {
			return bad("name")
		}
		if typ == "slink" {
			if n, target, ok := strings.Cut(name, " -> "); ok {
				name, e.Slink = n, target
			}
			if name == "" { // " -> target": a link without a name
				return bad("name")
			}
		}
		e.Name = name
		return e, nil
	}
	return bad("date")
}

// listTokens splits line into its space-separated fields, at most 12:
// enough to reach the name, which may hold spaces of its own.
func listTokens(line string) []token {
	var toks []token
	for i := 0; i < len(line) && len(toks) < 12; {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && line[j] != ' ' {
			j++
		}
		toks = append(toks, token{i, j})
		i = j
	}
	return toks
}

// listOwnerGroup reads the owner and group from mid, the fields of line
// between the mode and the size: an optional link count, the owner, an
// optional group, and a device's major number (ending in ","). ok is
// false when more fields are left.
func listOwnerGroup(line string, mid []token) (owner, group string, ok bool) {
	if len(mid) > 0 && isDigits(line[mid[0].start:mid[0].end]) && len(mid) > 1 {
		mid = mid[1:] // link count
	}
	if n := len(mid); n > 0 && strings.HasSuffix(line[mid[n-1].start:mid[n-1].end], ",") {
		mid = mid[:n-1] // a device's major number; the size is its minor
	}
	switch len(mid) {
	case 0:
	case 1:
		owner = line[mid[0].start:mid[0].end]
	case 2:
		owner = line[mid[0].start:mid[0].end]
		group = line[mid[1].start:mid[1].end]
	default:
		return "", "", false
	}
	return owner, group, true
}

// listDate interprets ls's "DD HH:MM" or "DD YYYY" date parts in UTC.
func listDate(mon time.Month, dayStr, tyStr string, now time.Time) (time.Time, bool) {
	if !isDigits(dayStr) || len(dayStr) > 2 {
		return time.Time{}, false
	}
	day, _ := strconv.Atoi(dayStr)
	if day < 1 || day > 31 {
		return time.Time{}, false
	}
	if hh, mm, ok := strings.Cut(tyStr, ":"); ok {
		if !isDigits(hh) || !isDigits(mm) || len(hh) > 2 || len(mm) != 2 {
			return time.Time{}, false
		}
		h, _ := strconv.Atoi(hh)
		m, _ := strconv.Atoi(mm)
		if h > 23 || m > 59 {
			return time.Time{}, false
		}
		now = now.UTC()
		// The latest year, at most now's, in which the date exists and is
		// not after now; 29 February may go back a few years.
		for y := now.Year(); y >= now.Year()-8; y-- {
			t := time.Date(y, mon, day, h, m, 0, 0, time.UTC)
			if t.Day() == day && !t.After(now) {
				return t, true
			}
		}
		return time.Time{}, false
	}
	if !isDigits(tyStr) || len(tyStr) != 4 {
		return time.Time{}, false
	}
	y, _ := strconv.Atoi(tyStr)
	t := time.Date(y, mon, day, 0, 0, 0, 0, time.UTC)
	if t.Day() != day {
		return time.Time{}, false
	}
	return t, true
}
