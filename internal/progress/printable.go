package progress

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s fit for a terminal: control characters (C0, DEL,
// C1) become \xNN or \u00NN escapes and bytes that are not UTF-8 become
// \xNN, so a name from a server cannot move the cursor, retitle the
// window or worse. Strings without such characters are returned as is.
func Printable(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// IsPrintable reports whether Printable leaves s as it is.
func IsPrintable(s string) bool { return Printable(s) == s }
