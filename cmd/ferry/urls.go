package main

// URLs, credentials (~/.netrc) and connections for the client subcommands
// (cp, ls, mkdir, rm, mv, cksum).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/progress"
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

// parseLocation parses a command-line location: "-", an ftp://, gsiftp://
// or file:// URL, or a local path.
//
// ftp://[user[:password]@]host[:port]/path names path on the server, port
// 21 by default; ftps:// the same with explicit FTPS (AUTH TLS on the
// same port, 21 by default; not implicit FTPS on 990);
// gsiftp://[user@]host[:port]/path the same with GSI, port 2811 by
// default. The path is percent-decoded and absolute; /~/ at its
// start makes it relative to the login directory (ftp://host/~/data is
// "data", ftp://host/~/ is "./"). A trailing slash is kept.
func parseLocation(arg string) (location, error) {
	if arg == "-" {
		return location{kind: locStdio, display: "-"}, nil
	}
	scheme, _, isURL := strings.Cut(arg, "://")
	if !isURL || strings.ContainsAny(scheme, "/\\") {
		if arg == "" {
			return location{}, errors.New("empty path")
		}
		return location{kind: locLocal, path: arg, display: arg}, nil
	}
	u, err := url.Parse(arg)
	if err != nil {
		return location{}, fmt.Errorf("bad URL %q: %v", redactURL(arg), unwrapURLError(err))
	}
	defaultPort := "21"
	ftps := false
	switch strings.ToLower(u.Scheme) {
	case "ftp":
	case "ftps":
		ftps = true
	case "gsiftp":
		defaultPort = "2811"
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return location{}, fmt.Errorf("%s: file:// URLs must be local (file:///path)", u.Redacted())
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return location{}, fmt.Errorf("%s: file:// URLs need an absolute path", u.Redacted())
		}
		return location{kind: locLocal, path: filepath.FromSlash(u.Path), display: arg}, nil
	default:
		return location{}, fmt.Errorf("%s: unsupported URL scheme %q (ftp://, ftps://, gsiftp://, file:// or a local path)", u.Redacted(), u.Scheme)
	}
	// wildcardURL writes the wildcard "?" of a pattern as %3f (lower
	// case, where people type %3F): messages show it as typed.
	display := strings.ReplaceAll(u.Redacted(), "%3f", "?")
	l := location{kind: locRemote, display: display, gsi: defaultPort == "2811", ftps: ftps}
	if u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(arg, "?") || strings.HasSuffix(arg, "#") {
		return location{}, fmt.Errorf("%s: '?' and '#' in a path must be written %%3F and %%23", l.display)
	}
	l.hostname = u.Hostname()
	if l.hostname == "" {
		return location{}, fmt.Errorf("no host in URL %s", redactURL(arg))
	}
	port := u.Port()
	if port == "" {
		port = defaultPort
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return location{}, fmt.Errorf("%s: bad port %q", l.display, port)
	}
	l.addr = net.JoinHostPort(l.hostname, port)
	if u.User != nil {
		l.user, l.hasUser = u.User.Username(), true
		l.pass, l.hasPass = u.User.Password()
	}
	switch p := u.Path; {
	case p == "":
		l.path = "/"
	case p == "/~":
		l.path = "."
	case p == "/~/":
		l.path = "./"
	case strings.HasPrefix(p, "/~/"):
		l.path = p[len("/~/"):]
	default:
		l.path = p
	}
	if strings.ContainsAny(l.path, "\r\n") {
		return location{}, fmt.Errorf("%s: the path contains a line break", l.display)
	}
	return l, nil
}

// unwrapURLError drops url.Error's repetition of the URL (which may hold a
// password).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactURL hides the password of a URL that url.Parse rejected.
func redactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	end := strings.IndexByte(rest, '/')
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return s
	}
	if user, _, hasPass := strings.Cut(rest[:at], ":"); hasPass {
		return scheme + "://" + user + ":xxxxx" + rest[at:]
	}
	return s
}

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

// clientOptions are the connection settings shared by the client
// subcommands.
type clientOptions struct {
	active  bool
	striped bool                // the server may be striped: accept data from its movers' hosts
	getenv  func(string) string // nil means os.Getenv
	gsi     *gsiFlags           // GSI options for gsiftp://; nil means the defaults
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
		return nil, &opError{what: "login to " + l.addr + " as " + user, err: err}
	}
	return c, nil
}

// dialTogether logs in to the sessions' servers at the same time: each
// login is several round trips. A failed dial is not repeated: the
// session's next Conn returns its error, as if it had dialled then.
func dialTogether(ctx context.Context, ss ...*client.Session) {
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() { _, errs[i] = s.Conn(ctx) })
	}
	wg.Wait()
	for i, s := range ss {
		if errs[i] == nil {
			continue
		}
		dial, err := s.Dial, errs[i]
		s.Dial = func(context.Context) (*client.Conn, error) {
			s.Dial = dial
			return nil, err
		}
	}
}

// quitTimeout bounds the wait for the reply to QUIT: a server that does
// not answer must not hold up the end of a command, or Ctrl-C.
var quitTimeout = 5 * time.Second

// hangUp ends a session politely, within quitTimeout; its errors do not
// matter any more. When ctx is done it just closes the connection.
func hangUp(ctx context.Context, c *client.Conn) {
	if ctx.Err() != nil {
		c.Close()
		return
	}
	qctx, cancel := context.WithTimeout(ctx, quitTimeout)
	defer cancel()
	_ = c.Quit(qctx)
}

// closeSession is hangUp for a Session.
func closeSession(ctx context.Context, s *client.Session) {
	qctx, cancel := context.WithTimeout(ctx, quitTimeout)
	defer cancel()
	_ = s.Close(qctx) // closes without QUIT when ctx is done
}

// opError is a failed operation: "what: why", where a server's reply is
// shown as one line.
type opError struct {
	what string
	err  error
}

func (e *opError) Error() string { return e.what + ": " + describe(e.err) }
func (e *opError) Unwrap() error { return e.err }

// describe renders an error for the user. A server reply becomes
// "CODE text"; GCT's structured errors are shortened to their reason and
// error string.
func describe(err error) string {
	var re *client.ReplyError
	if errors.Is(err, client.ErrThirdPartyFTPS) {
		return progress.Printable(err.Error() + " (with -notpt)")
	}
	if !errors.As(err, &re) {
		return progress.Printable(err.Error())
	}
	r := re.Reply
	var reason, errstr string
	var lines []string
	for i, l := range r.Lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "GridFTP-Reason:"):
			reason = strings.TrimSpace(strings.TrimPrefix(l, "GridFTP-Reason:"))
		case strings.HasPrefix(l, "GridFTP-Error-String:"):
			errstr = strings.TrimSpace(strings.TrimPrefix(l, "GridFTP-Error-String:"))
		case l == "" || (i == len(r.Lines)-1 && i > 0 && strings.HasPrefix(l, "End")):
		default:
			lines = append(lines, l)
		}
	}
	text := strings.Join(lines, "; ")
	switch {
	case reason != "" && errstr != "":
		text = reason + ": " + errstr
	case errstr != "":
		text = errstr
	}
	msg := fmt.Sprintf("%03d %s", r.Code, text)
	switch {
	case errors.Is(err, client.ErrTLSRefused):
		msg = "the server refused AUTH TLS (ftps://), so nothing was sent in clear: " + msg
	case errors.Is(err, client.ErrDataProtectionRefused):
		msg = "the server refused encrypted data channels (PBSZ 0, PROT P): " + msg
	}
	return progress.Printable(msg)
}
