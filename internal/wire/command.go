package wire

import (
	"errors"
	"strings"
)

// ErrEmptyCommand is returned by ParseCommand for an empty line.
var ErrEmptyCommand = errors.New("wire: empty command")

// ErrBadCommand is returned by ParseCommand for a line that starts with a
// space or whose verb holds anything but ASCII letters and digits.
var ErrBadCommand = errors.New("wire: malformed command")

// Command is one parsed control-channel command (RFC 959 §4.1).
type Command struct {
	// Verb is the command name, upper-cased ("RETR", "SITE").
	Verb string
	// Arg is the rest of the line after the first run of spaces that
	// follows the verb, verbatim: inner and trailing spaces are kept,
	// because the last argument of a command takes the rest of the line
	// (GCT looks up "SIZE /x " as the path "/x ").
	Arg string
}

// ParseCommand splits a command line (without its terminator) into verb and
// argument. The verb is everything before the first space, upper-cased; it
// must consist of ASCII letters and digits. Verb length is not limited here.
func ParseCommand(line string) (Command, error) {
	if line == "" {
		return Command{}, ErrEmptyCommand
	}
	verb, rest, _ := strings.Cut(line, " ")
	if verb == "" {
		return Command{}, ErrBadCommand
	}
	for i := 0; i < len(verb); i++ {
		c := verb[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return Command{}, ErrBadCommand
		}
	}
	return Command{Verb: strings.ToUpper(verb), Arg: strings.TrimLeft(rest, " ")}, nil
}

// SplitArgs splits arg on runs of spaces (tabs are not separators) into at
// most n fields; leading spaces are skipped. The n-th field takes the
// remainder of arg verbatim, including inner and trailing spaces; when
// fewer than n fields are present, trailing spaces are not a field. n <= 0
// means no limit. An arg of only spaces yields nil.
func SplitArgs(arg string, n int) []string {
	var out []string
	for {
		arg = strings.TrimLeft(arg, " ")
		if arg == "" {
			return out
		}
		if n > 0 && len(out) == n-1 {
			return append(out, arg)
		}
		field, rest, _ := strings.Cut(arg, " ")
		out = append(out, field)
		arg = rest
	}
}

// String returns the command as "VERB arg", or "VERB" when there is no
// argument. It is meant for logs: the argument of PASS is shown as "****".
func (c Command) String() string {
	if c.Arg == "" {
		return c.Verb
	}
	if c.Verb == "PASS" || c.Verb == "ADAT" || c.Verb == "DCSC" {
		// A password, a security token (a Kerberos AP-REQ with its
		// ticket, a GSI handshake message) or a credential with its
		// private key (DCSC P): never in a log.
		return c.Verb + " ****"
	}
	return c.Verb + " " + c.Arg
}
