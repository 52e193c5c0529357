package replica

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Scheme is the prefix of a logical file name as the commands take it.
const Scheme = "lfn:"

// IsLFN reports whether arg is written as a logical file name (starts
// with "lfn:", in any case); ParseLFN says whether it is a valid one.
func IsLFN(arg string) bool {
	return len(arg) >= len(Scheme) && strings.EqualFold(arg[:len(Scheme)], Scheme)
}

// ParseLFN parses a logical file name written lfn:/path (or lfn:///path)
// and returns its path: absolute, clean, without a trailing slash
// (except the root, "/"). It refuses a relative path, a host
// (lfn://host/path), "." or ".." elements, empty elements ("//"), a
// trailing slash, and control characters, '?', '#' or '\\'.
func ParseLFN(arg string) (string, error) {
	if !IsLFN(arg) {
		return "", fmt.Errorf("malformed lfn: URL %q: want lfn:/path", arg)
	}
	p := arg[len(Scheme):]
	if strings.HasPrefix(p, "///") {
		p = p[2:]
	} else if strings.HasPrefix(p, "//") {
		return "", fmt.Errorf("malformed lfn: URL %q: a logical file name has no host (want lfn:/path)", arg)
	}
	if err := checkPath(p); err != nil {
		return "", fmt.Errorf("malformed lfn: URL %q: %v", arg, err)
	}
	return p, nil
}

// checkPath checks an LFN path (see ParseLFN).
func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case !strings.HasPrefix(p, "/"):
		return errors.New("the path must be absolute (lfn:/path)")
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return errors.New("a trailing slash")
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f || c == '?' || c == '#' || c == '\\' {
			return fmt.Errorf("the character %q is not allowed", c)
		}
	}
	for _, el := range strings.Split(p[1:], "/") {
		switch el {
		case "":
			return errors.New("an empty path element")
		case ".", "..":
			return fmt.Errorf("a %q path element", el)
		}
	}
	if path.Clean(p) != p {
		return errors.New("the path is not clean")
	}
	return nil
}

// Format writes the path of an LFN as a lfn: URL.
func Format(p string) string { return Scheme + p }

// Join is the LFN below dir named by the slash-separated relative path
// rel.
func Join(dir, rel string) string { return path.Join(dir, rel) }
