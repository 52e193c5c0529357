package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// errFacts is the base of every fact-line parse error.
var errFacts = errors.New("wire: bad MLSx facts line")

// Entry describes one file system object as listed by MLST/MLSD (RFC 3659
// §7) or LIST. Fields that are not known hold the sentinels set by NewEntry.
type Entry struct {
	// Name is the path (MLST) or base name (MLSD) of the object.
	Name string
	// Type is "file", "dir", "cdir", "pdir", "slink", an OS-specific
	// type such as TypeFIFO, or "" when unknown. Parsing lower-cases the
	// RFC 3659 values; any other value (such as "OS.unix=slink:/x") is
	// kept raw.
	Type string
	// Size is the size in bytes, or -1 when unknown.
	Size int64
	// Modify is the modification time, or the zero Time when unknown.
	Modify time.Time
	// Perm is the RFC 3659 perm fact ("r", "el", "cfmpel"), or "" when
	// unknown.
	Perm string
	// Mode holds the UNIX.mode permission bits (0644), or -1 when unknown.
	Mode int
	// Owner and Group are the UNIX.owner and UNIX.group names, or "".
	Owner, Group string
	// UID and GID are UNIX.uid and UNIX.gid, or -1 when unknown.
	UID, GID int
	// Unique is the Unique fact (GCT: "<hex dev>-<hex inode>"), or "".
	Unique string
	// Slink is the UNIX.slink target, or "".
	Slink string
	// Count is X.count, the number of directory entries, or -1.
	Count int
	// Facts holds, after parsing, every fact with its key lower-cased and
	// its value raw. AppendFacts ignores it.
	Facts map[string]string
}

// The OS-specific Type facts (RFC 3659 §7.5.1) of the objects that are
// neither files, directories nor links.
const (
	TypeFIFO        = "OS.unix=fifo"
	TypeSocket      = "OS.unix=socket"
	TypeCharDevice  = "OS.unix=chr"
	TypeBlockDevice = "OS.unix=blk"
)

// NewEntry returns an Entry for name with every other field unknown.
func NewEntry(name string) Entry {
	return Entry{Name: name, Size: -1, Mode: -1, UID: -1, GID: -1, Count: -1}
}

// FactSet is a set of the MLSx facts Ferry knows, as selected with
// OPTS MLST (RFC 3659 §7.9).
type FactSet uint32

// The facts, in GCT's output order.
const (
	FactType FactSet = 1 << iota
	FactModify
	FactSize
	FactPerm
	FactMode
	FactOwner
	FactUID
	FactGroup
	FactGID
	FactUnique
	FactSlink
	FactCount
)

// AllFacts is the set of every fact Ferry knows.
const AllFacts = FactCount<<1 - 1

// factNames holds the RFC or GCT name of each fact, in bit order.
var factNames = [...]string{
	"Type", "Modify", "Size", "Perm", "UNIX.mode", "UNIX.owner",
	"UNIX.uid", "UNIX.group", "UNIX.gid", "Unique", "UNIX.slink", "X.count",
}

// ParseFactSet parses an OPTS MLST argument such as "type;size;modify;".
// Names are case-insensitive; unknown names are ignored.
func ParseFactSet(s string) FactSet {
	var fs FactSet
	for _, name := range strings.Split(s, ";") {
		name = strings.TrimSpace(name)
		for i, n := range factNames {
			if strings.EqualFold(name, n) {
				fs |= 1 << i
			}
		}
	}
	return fs
}

// String returns the set as fact names each followed by ";", in canonical
// order, e.g. "Type;Modify;Size;". The empty set gives "".
func (fs FactSet) String() string {
	var b strings.Builder
	for i, n := range factNames {
		if fs&(1<<i) != 0 {
			b.WriteString(n)
			b.WriteByte(';')
		}
	}
	return b.String()
}

// FeatMLST returns the body of the MLST feature line for FEAT (RFC 3659
// §7.8): every known fact followed by "*" when selected and ";".
func FeatMLST(selected FactSet) string {
	var b strings.Builder
	for i, n := range factNames {
		b.WriteString(n)
		if selected&(1<<i) != 0 {
			b.WriteByte('*')
		}
		b.WriteByte(';')
	}
	return b.String()
}

// AppendFacts appends e as an MLSx entry without line terminator: the facts
// in sel whose values are known, in GCT order (Type, Modify, Size, Perm,
// UNIX.mode, UNIX.owner, UNIX.uid, UNIX.group, UNIX.gid, Unique,
// UNIX.slink, X.count), each as "Fact=value;", then one space and the name.
// Modify is written as YYYYMMDDHHMMSS UTC and UNIX.mode as four octal
// digits. A fact whose value contains ';', '=' (but for Type's
// "OS.unix=fifo" form), CR or LF is left out so that it cannot corrupt the
// line.
func AppendFacts(b []byte, e Entry, sel FactSet) []byte {
	put := func(f FactSet, known bool, v string) {
		bad := ";=\r\n"
		if f == FactType {
			bad = ";\r\n"
		}
		if sel&f == 0 || !known || strings.ContainsAny(v, bad) {
			return
		}
		for i := range factNames {
			if f == 1<<i {
				b = append(b, factNames[i]...)
			}
		}
		b = append(b, '=')
		b = append(b, v...)
		b = append(b, ';')
	}
	put(FactType, e.Type != "", e.Type)
	if !e.Modify.IsZero() {
		put(FactModify, true, FormatTime(e.Modify))
	}
	put(FactSize, e.Size >= 0, strconv.FormatInt(e.Size, 10))
	put(FactPerm, e.Perm != "", e.Perm)
	put(FactMode, e.Mode >= 0, fmt.Sprintf("%04o", e.Mode&0o7777))
	put(FactOwner, e.Owner != "", e.Owner)
	put(FactUID, e.UID >= 0, strconv.Itoa(e.UID))
	put(FactGroup, e.Group != "", e.Group)
	put(FactGID, e.GID >= 0, strconv.Itoa(e.GID))
	put(FactUnique, e.Unique != "", e.Unique)
	put(FactSlink, e.Slink != "", e.Slink)
	put(FactCount, e.Count >= 0, strconv.Itoa(e.Count))
	b = append(b, ' ')
	return append(b, e.Name...)
}

// ParseFactsLine parses an MLSx entry "fact=value;fact=value; name" (RFC
// 3659 §7.2). A single leading space, as on MLST's control-channel line, is
// allowed. The name is everything after the space that ends the facts,
// verbatim; it may contain spaces and ';'. A line without facts, " name", is
// accepted too; a name that itself looks like facts ("a=b; c") makes such
// a line ambiguous, and it is then read as facts. Unknown facts are kept in Facts only; known facts with
// unparsable values are kept in Facts and leave their field unknown.
func ParseFactsLine(line string) (Entry, error) {
	body := strings.TrimPrefix(line, " ")
	facts, name, ok := splitFacts(body)
	if !ok {
		if !strings.HasPrefix(line, " ") {
			return Entry{}, fmt.Errorf("%w: %q", errFacts, line)
		}
		facts, name = nil, line[1:]
	}
	if name == "" {
		return Entry{}, fmt.Errorf("%w: no name in %q", errFacts, line)
	}
	e := NewEntry(name)
	if len(facts) > 0 {
		e.Facts = make(map[string]string, len(facts))
	}
	for _, f := range facts {
		k, v, _ := strings.Cut(f, "=")
		k = strings.ToLower(k)
		e.Facts[k] = v
		switch k {
		case "type":
			switch t := strings.ToLower(v); t {
			case "file", "dir", "cdir", "pdir", "slink":
				e.Type = t
			default:
				e.Type = v
			}
		case "modify":
			if t, err := ParseTime(v); err == nil {
				e.Modify = t
			}
		case "size":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && isDigits(v) {
				e.Size = n
			}
		case "perm":
			e.Perm = v
		case "unix.mode":
			if n, err := strconv.ParseUint(v, 8, 32); err == nil && n <= 0o7777 && isDigits(v) {
				e.Mode = int(n)
			}
		case "unix.owner":
			e.Owner = v
		case "unix.group":
			e.Group = v
		case "unix.uid":
			e.UID = parseID(v)
		case "unix.gid":
			e.GID = parseID(v)
		case "unique":
			e.Unique = v
		case "unix.slink":
			e.Slink = v
		case "x.count":
			e.Count = parseID(v)
		}
	}
	return e, nil
}

// splitFacts splits "k=v;k=v; name" into its facts ("k=v") and name. It
// reports false when s does not start with at least one well-formed fact
// followed by "; ".
func splitFacts(s string) (facts []string, name string, ok bool) {
	for {
		semi := strings.IndexByte(s, ';')
		if semi < 0 {
			return nil, "", false
		}
		f := s[:semi]
		eq := strings.IndexByte(f, '=')
		if eq <= 0 || strings.ContainsAny(f[:eq], " \r\n") {
			return nil, "", false
		}
		facts = append(facts, f)
		s = s[semi+1:]
		if strings.HasPrefix(s, " ") {
			return facts, s[1:], true
		}
	}
}

// isDigits reports whether s is non-empty and all ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// parseID parses a non-negative decimal int32, or returns -1.
func parseID(s string) int {
	if !isDigits(s) {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return -1
	}
	return int(n)
}
