package transfer

import (
	"context"
	"fmt"
)

// SourceError is the failure of one candidate source of CopyAny.
type SourceError struct {
	Src Location
	// Check is set when the copy itself succeeded and the check refused
	// it (a wrong checksum).
	Check bool
	Err   error
}

func (e *SourceError) Error() string { return e.Src.Display + ": " + Describe(e.Err) }
func (e *SourceError) Unwrap() error { return e.Err }

// AllSourcesError is the error of CopyAny when every candidate failed;
// Errs holds one SourceError per candidate tried, in order.
type AllSourcesError struct {
	Errs []*SourceError
}

func (e *AllSourcesError) Error() string {
	if len(e.Errs) == 0 {
		return "no source to copy from"
	}
	last := e.Errs[len(e.Errs)-1]
	if len(e.Errs) == 1 {
		return last.Error()
	}
	return fmt.Sprintf("all %d sources failed; the last, %s", len(e.Errs), last.Error())
}

// Unwrap returns the candidates' errors.
func (e *AllSourcesError) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, s := range e.Errs {
		out[i] = s
	}
	return out
}

// CopyAny copies the first of srcs that works to req.Dst: it tries each
// in order (req.Src is ignored) with Copy, and after a copy that
// succeeded runs check, when not nil, on its Result (to compare a
// checksum with the expected one, say; check removes a wrong
// destination itself). A source whose copy or check fails is reported
// to failed (when not nil) and the next one tried, with an EventNote
// saying so. It returns the Result of the source that worked and its
// index in srcs; when none did, an *AllSourcesError. A done ctx ends it
// at once.
func (e *Engine) CopyAny(ctx context.Context, srcs []Location, req Request,
	check func(ctx context.Context, res Result) error, failed func(*SourceError), on func(Event)) (Result, int, error) {
	all := &AllSourcesError{}
	for i, src := range srcs {
		r := req
		r.Src = src
		res, err := e.Copy(ctx, r, on)
		se := &SourceError{Src: src, Err: err}
		if err == nil && check != nil {
			if err = check(ctx, res); err != nil {
				se.Check, se.Err = true, err
			}
		}
		if err == nil {
			return res, i, nil
		}
		if ctx.Err() != nil {
			return res, i, err
		}
		all.Errs = append(all.Errs, se)
		if failed != nil {
			failed(se)
		}
		if on != nil && i+1 < len(srcs) {
			on(Event{Kind: EventNote, Src: src, Dst: req.Dst, Note: se.Error() + "; trying " + srcs[i+1].Display})
		}
	}
	return Result{Dst: req.Dst}, -1, all
}
