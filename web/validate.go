package web

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Bounds on the names and paths the browser sends.
const (
	maxNameBytes = 1024 // one name (an entry of a directory)
	maxPathBytes = 8192 // a path, a URL
)

// validator is a request body that checks its own fields; readJSON calls
// validate and answers 400 with its error, before the request reaches a
// handler and so before any server is contacted.
type validator interface {
	validate() error
}

// checkText returns a badRequest unless s, the request's field what, is
// at most max bytes long and holds no control character (C0, DEL, C1):
// no file system or server is asked about a name with a NUL or a line
// break in it, and none is echoed into a listing or a log.
func checkText(what, s string, max int) error {
	if len(s) > max {
		return badRequest{fmt.Errorf("%s: too long (%d bytes; at most %d)", what, len(s), max)}
	}
	for i, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return badRequest{fmt.Errorf("%s: control character %s at byte %d", what, strconv.QuoteRune(r), i)}
		}
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return badRequest{fmt.Errorf("%s: not UTF-8 at byte %d", what, i)}
			}
		}
	}
	return nil
}

// checkNameText is checkText for a name, which must also be one path
// element (checkName).
func checkNameText(what, name string) error {
	if err := checkText(what, name, maxNameBytes); err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return badRequest{fmt.Errorf("%s: %w", what, err)}
	}
	return nil
}

func (r copyRequest) validate() error {
	if len(r.Names) > 10000 {
		return badRequest{errors.New("names: too many")}
	}
	errs := []error{checkText("srcDir", r.SrcDir, maxPathBytes), checkText("dstDir", r.DstDir, maxPathBytes)}
	for _, n := range r.Names {
		errs = append(errs, checkNameText("names", n))
	}
	return firstError(errs)
}

func (r fileOpRequest) validate() error {
	errs := []error{checkText("dir", r.Dir, maxPathBytes), checkText("name", r.Name, maxNameBytes)}
	if r.To != "" {
		errs = append(errs, checkText("to", r.To, maxNameBytes))
	}
	return firstError(errs)
}

func (r lfnCopyRequest) validate() error {
	return firstError([]error{checkText("lfn", r.LFN, maxPathBytes), checkText("dstDir", r.DstDir, maxPathBytes)})
}

func (r openRequest) validate() error {
	return firstError([]error{checkText("url", r.URL, maxPathBytes), checkText("user", r.User, maxNameBytes)})
}

// firstError returns the first error of errs that is not nil.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
