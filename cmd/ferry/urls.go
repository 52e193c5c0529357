package main

// URLs, credentials (~/.netrc) and connections for the client subcommands
// (cp, ls, mkdir, rm, mv, cksum).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/transfer"
)

// locKind says what a command-line location names.
type locKind int

const (
	locLocal  locKind = iota // a local file: a plain path or file:///path
	locRemote                // a file on an FTP/GridFTP server: ftp:// or gsiftp://host/path
	locStdio                 // "-": standard input or output
)

// anonymousPassword is the password of anonymous logins.
const anonymousPassword = "ferry@"

// location is one file argument of the client subcommands.
type location struct {
	kind locKind
	// path is the local file path, or the path on the server: absolute,
	// or relative to the login directory for ftp://host/~/rel.
	path string
	// addr ("host:port") and hostname are where a remote location is.
	addr, hostname string
	// gsi is set for gsiftp:// URLs: GSI authentication.
	gsi bool
	// ftps is set for ftps:// URLs: explicit FTPS (AUTH TLS, PROT P).
	ftps bool
	// user and pass come from the URL; hasUser and hasPass say whether
	// the URL has them at all.
	user, pass       string
	hasUser, hasPass bool
	// display is the argument for messages, without a password.
	display string
}

func (l location) String() string { return l.display }

// netrcEntry is one machine (or the default) of a .netrc file.
type netrcEntry struct {
	machine  string // "" for default
	login    string
	password string
}

// parseNetrc parses the text of a .netrc file: "machine NAME", "default",
// "login NAME", "password WORD", "account WORD" tokens separated by white
// space, tokens in double quotes with backslash escapes, comments from
// "#" at the start of a token to the end of the line, and "macdef NAME"
// blocks, which are skipped up to the next empty line.
func parseNetrc(text string) ([]netrcEntry, error) {
	var out []netrcEntry
	s := &netrcScanner{text: text}
	cur := -1 // index of the entry being read
	for {
		tok, ok, err := s.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		switch tok {
		case "machine":
			name, ok, err := s.next()
			if err != nil || !ok {
				return nil, errors.Join(err, fmt.Errorf("line %d: machine without a name", s.line))
			}
			out = append(out, netrcEntry{machine: name})
			cur = len(out) - 1
		case "default":
			out = append(out, netrcEntry{})
			cur = len(out) - 1
		case "login", "password", "account":
			v, ok, err := s.next()
			if err != nil || !ok {
				return nil, errors.Join(err, fmt.Errorf("line %d: %s without a value", s.line, tok))
			}
			if cur < 0 {
				return nil, fmt.Errorf("line %d: %s before machine or default", s.line, tok)
			}
			switch tok {
			case "login":
				out[cur].login = v
			case "password":
				out[cur].password = v
			}
		case "macdef":
			if _, _, err := s.next(); err != nil {
				return nil, err
			}
			s.skipMacro()
		default:
			// Unknown keywords (such as "port" of some implementations)
			// are ignored.
		}
	}
}

// netrcScanner splits a .netrc file into tokens.
type netrcScanner struct {
	text string
	pos  int
	line int
}

func (s *netrcScanner) next() (string, bool, error) {
	if s.line == 0 {
		s.line = 1
	}
	for s.pos < len(s.text) {
		c := s.text[s.pos]
		switch {
		case c == '\n':
			s.line++
			s.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			s.pos++
		case c == '#':
			for s.pos < len(s.text) && s.text[s.pos] != '\n' {
				s.pos++
			}
		case c == '"':
			var b strings.Builder
			s.pos++
			for {
				if s.pos >= len(s.text) {
					return "", false, fmt.Errorf("line %d: unterminated quoted token", s.line)
				}
				c := s.text[s.pos]
				s.pos++
				switch {
				case c == '"':
					return b.String(), true, nil
				case c == '\\' && s.pos < len(s.text):
					b.WriteByte(s.text[s.pos])
					s.pos++
				default:
					if c == '\n' {
						s.line++
					}
					b.WriteByte(c)
				}
			}
		default:
			start := s.pos
			for s.pos < len(s.text) && !strings.ContainsRune(" \t\r\n\f\v", rune(s.text[s.pos])) {
				s.pos++
			}
			return s.text[start:s.pos], true, nil
		}
	}
	return "", false, nil
}

// skipMacro skips the body of a macdef: from the next line up to and
// including the first empty (or blank) line.
func (s *netrcScanner) skipMacro() {
	// The rest of the macdef line.
	for s.pos < len(s.text) && s.text[s.pos] != '\n' {
		s.pos++
	}
	for s.pos < len(s.text) {
		s.pos++ // the '\n'
		s.line++
		end := strings.IndexByte(s.text[s.pos:], '\n')
		if end < 0 {
			end = len(s.text) - s.pos
		}
		line := s.text[s.pos : s.pos+end]
		s.pos += end
		if strings.TrimSpace(line) == "" {
			return
		}
	}
}

// lookupNetrc finds the entry for host (case-insensitively), and if user
// is not empty, with that login; a default entry is used when no machine
// matches. Entries after default are ignored, as in ftp(1).
func lookupNetrc(entries []netrcEntry, host, user string) (netrcEntry, bool) {
	for _, e := range entries {
		if e.machine == "" {
			if user == "" || e.login == user {
				return e, true
			}
			return netrcEntry{}, false
		}
		if strings.EqualFold(e.machine, host) && (user == "" || e.login == user) {
			return e, true
		}
	}
	return netrcEntry{}, false
}

// netrcFile returns the path of the .netrc file: $NETRC, else ~/.netrc.
func netrcFile(getenv func(string) string) string {
	if p := getenv("NETRC"); p != "" {
		return p
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return ""
		}
	}
	return filepath.Join(home, ".netrc")
}

// credentials returns the user and password for a remote location: from
// the URL; else from the .netrc file (a missing file is no error); else
// anonymous with password "ferry@". A URL with a user but no password
// takes the password from .netrc for that user, or "ferry@" for the
// anonymous users "anonymous" and "ftp".
func credentials(l location, getenv func(string) string) (user, pass string, err error) {
	if l.hasUser && l.hasPass {
		return l.user, l.pass, nil
	}
	var entries []netrcEntry
	if file := netrcFile(getenv); file != "" {
		data, err := os.ReadFile(file)
		switch {
		case err == nil:
			if entries, err = parseNetrc(string(data)); err != nil {
				return "", "", fmt.Errorf("%s: %w", file, err)
			}
		case !errors.Is(err, os.ErrNotExist):
			return "", "", err
		}
	}
	if l.hasUser {
		if e, ok := lookupNetrc(entries, l.hostname, l.user); ok {
			return l.user, e.password, nil
		}
		if l.user == "anonymous" || l.user == "ftp" {
			return l.user, anonymousPassword, nil
		}
		return l.user, "", nil
	}
	if e, ok := lookupNetrc(entries, l.hostname, ""); ok && e.login != "" {
		return e.login, e.password, nil
	}
	return "anonymous", anonymousPassword, nil
}

// export is the transfer.Location of l.
func (l location) export() transfer.Location {
	return transfer.Location{Kind: transfer.Kind(l.kind), Path: l.path, Addr: l.addr, Host: l.hostname, GSI: l.gsi, FTPS: l.ftps,
		User: l.user, Pass: l.pass, HasUser: l.hasUser, HasPass: l.hasPass, Display: l.display}
}

// importLocation is the location of a transfer.Location.
func importLocation(l transfer.Location) location {
	return location{kind: locKind(l.Kind), path: l.Path, addr: l.Addr, hostname: l.Host, gsi: l.GSI, ftps: l.FTPS,
		user: l.User, pass: l.Pass, hasUser: l.HasUser, hasPass: l.HasPass, display: l.Display}
}

// opError is a failed operation: "what: why" (transfer.OpError).
type opError = transfer.OpError

// describe renders an error for the user (transfer.Describe).
func describe(err error) string { return transfer.Describe(err) }

// clientOptions are the connection settings shared by the client
// subcommands.
type clientOptions struct {
	active  bool
	striped bool                // the server may be striped: accept data from its movers' hosts
	getenv  func(string) string // nil means os.Getenv
	gsi     *gsiFlags           // GSI options for gsiftp://; nil means the defaults
	log     *slog.Logger        // when not nil, receives the control channel records, with "server"
}

// connect dials a remote location and logs in: for gsiftp:// with GSI and
// the grid-mapfile mapping (or the URL's user), else with the credentials
// of the URL, ~/.netrc or anonymous; ftps:// first switches to TLS (see
// ftpsLogin).
func connect(ctx context.Context, l location, o clientOptions) (*client.Conn, error) {
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := &client.Config{Active: o.active, StripedServer: o.striped}
	if o.log != nil {
		cfg.Logger = o.log.With("server", l.addr)
	}
	var user, pass string
	var err error
	if l.gsi {
		g := o.gsi
		if g == nil {
			g = &gsiFlags{}
		}
		if cfg.GSI, err = g.config(); err != nil {
			return nil, err
		}
		user, pass = l.user, l.pass
	} else if l.ftps {
		if cfg.FTPS, user, pass, err = ftpsLogin(l, o.gsi, getenv); err != nil {
			return nil, err
		}
	} else if o.gsi != nil && o.gsi.krb.on {
		// Kerberos: the principal is mapped; the URL's user may pick
		// one of its accounts. No password is sent.
		if cfg.Kerberos, err = o.gsi.krb.config(); err != nil {
			return nil, err
		}
		user = l.user
	} else if user, pass, err = credentials(l, getenv); err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, l.addr, cfg)
	if err != nil {
		return nil, dialError(l, err)
	}
	if err := c.Login(ctx, user, pass); err != nil {
		c.Close()
		if user == "" {
			user = client.GlobusMapping
		}
		return nil, &opError{What: "login to " + l.addr + " as " + user, Err: err}
	}
	return c, nil
}

// hangUp ends a session politely, within transfer.QuitTimeout (a server
// that does not answer must not hold up the end of a command); its
// errors do not matter any more. When ctx is done it just closes the
// connection.
func hangUp(ctx context.Context, c *client.Conn) {
	if ctx.Err() != nil {
		c.Close()
		return
	}
	qctx, cancel := context.WithTimeout(ctx, transfer.QuitTimeout)
	defer cancel()
	_ = c.Quit(qctx)
}

// endpointKey names the endpoint of a remote location: its URL prefix
// with user and password; "" for local files.
func endpointKey(l location) string { return l.export().Endpoint() }

// parseLocation parses a command-line location (transfer.ParseLocation).
func parseLocation(arg string) (location, error) {
	l, err := transfer.ParseLocation(arg)
	if err != nil {
		return location{}, err
	}
	return importLocation(l), nil
}

// redactURL hides the password of a URL that url.Parse rejected.
func redactURL(s string) string { return transfer.RedactURL(s) }
