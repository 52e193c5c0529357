package transfer

// Parsing the locations ferry cp takes: "-", URLs and local paths.

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// ParseLocation parses a location as ferry cp takes it: "-", an ftp://, gsiftp://
// or file:// URL, or a local path.
//
// ftp://[user[:password]@]host[:port]/path names path on the server, port
// 21 by default; ftps:// the same with explicit FTPS (AUTH TLS on the
// same port, 21 by default; not implicit FTPS on 990);
// gsiftp://[user@]host[:port]/path the same with GSI, port 2811 by
// default. The path is percent-decoded and absolute; /~/ at its
// start makes it relative to the login directory (ftp://host/~/data is
// "data", ftp://host/~/ is "./"). A trailing slash is kept.
func ParseLocation(arg string) (Location, error) {
	if arg == "-" {
		return Location{Kind: Stdio, Display: "-"}, nil
	}
	scheme, _, isURL := strings.Cut(arg, "://")
	if !isURL || strings.ContainsAny(scheme, "/\\") {
		if arg == "" {
			return Location{}, errors.New("empty path")
		}
		return Location{Kind: Local, Path: arg, Display: arg}, nil
	}
	u, err := url.Parse(arg)
	if err != nil {
		return Location{}, fmt.Errorf("bad URL %q: %v", redactURL(arg), unwrapURLError(err))
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
			return Location{}, fmt.Errorf("%s: file:// URLs must be local (file:///path)", u.Redacted())
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return Location{}, fmt.Errorf("%s: file:// URLs need an absolute path", u.Redacted())
		}
		return Location{Kind: Local, Path: filepath.FromSlash(u.Path), Display: arg}, nil
	default:
		return Location{}, fmt.Errorf("%s: unsupported URL scheme %q (ftp://, ftps://, gsiftp://, file:// or a local path)", u.Redacted(), u.Scheme)
	}
	// wildcardURL writes the wildcard "?" of a pattern as %3f (lower
	// case, where people type %3F): messages show it as typed.
	display := strings.ReplaceAll(u.Redacted(), "%3f", "?")
	l := Location{Kind: Remote, Display: display, GSI: defaultPort == "2811", FTPS: ftps}
	if u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(arg, "?") || strings.HasSuffix(arg, "#") {
		return Location{}, fmt.Errorf("%s: '?' and '#' in a path must be written %%3F and %%23", l.Display)
	}
	l.Host = u.Hostname()
	if l.Host == "" {
		return Location{}, fmt.Errorf("no host in URL %s", redactURL(arg))
	}
	port := u.Port()
	if port == "" {
		port = defaultPort
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return Location{}, fmt.Errorf("%s: bad port %q", l.Display, port)
	}
	l.Addr = net.JoinHostPort(l.Host, port)
	if u.User != nil {
		l.User, l.HasUser = u.User.Username(), true
		l.Pass, l.HasPass = u.User.Password()
	}
	switch p := u.Path; {
	case p == "":
		l.Path = "/"
	case p == "/~":
		l.Path = "."
	case p == "/~/":
		l.Path = "./"
	case strings.HasPrefix(p, "/~/"):
		l.Path = p[len("/~/"):]
	default:
		l.Path = p
	}
	if strings.ContainsAny(l.Path, "\r\n") {
		return Location{}, fmt.Errorf("%s: the path contains a line break", l.Display)
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

// RedactURL hides the password of a URL that url.Parse rejected (which
// url.URL.Redacted cannot).
func RedactURL(s string) string { return redactURL(s) }
