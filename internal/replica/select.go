package replica

import (
	"cmp"
	"net/url"
	"slices"

	"github.com/ferrygrid/ferry/internal/advisor"
	"github.com/ferrygrid/ferry/internal/history"
)

// Candidate is a replica considered as the source of a copy, with the
// rate the advisor predicts for it.
type Candidate struct {
	Replica Replica
	// Rate is the predicted rate in bytes per second; 0: unknown.
	Rate float64
	// Basis is the kind of evidence of Rate (advisor.Default when none).
	Basis advisor.Basis
}

// Evidence is what predictions are made from: the history's records and
// probes, this host's kernel limits and name.
type Evidence struct {
	Records    []history.Record
	Probes     []history.Probe
	Kernel     advisor.Kernel
	ClientHost string
}

// Predict returns the candidates of the replicas of e, each with the
// rate the advisor predicts for copying it (e.Size bytes) to dst (the
// local endpoint {Scheme: "file"} for a download). It is pure: the
// evidence is read by the caller.
func Predict(e Entry, dst history.Endpoint, ev Evidence) []Candidate {
	out := make([]Candidate, 0, len(e.Replicas))
	for _, r := range e.Replicas {
		c := Candidate{Replica: r, Basis: advisor.Default}
		if u, err := url.Parse(r.URL); err == nil {
			a := advisor.Advise(advisor.Input{
				Src: history.EndpointOf(u), Dst: dst, Size: e.Size,
				Records: ev.Records, Probes: ev.Probes, Kernel: ev.Kernel, ClientHost: ev.ClientHost,
			})
			c.Basis = a.Basis
			if a.Basis != advisor.Default {
				c.Rate = a.PredictedRate
			}
		}
		out = append(out, c)
	}
	return out
}

// Rank orders the candidates to try, best first, and leaves out the Bad
// ones (their contents are known to be wrong):
//
//   - OK and Unverified replicas before Missing ones (a missing file may
//     have come back, so it is a last resort, not excluded);
//   - among those, a higher predicted Rate first, and a known rate before
//     an unknown one;
//   - then OK before Unverified, then the most recently verified, then
//     by URL (so that the order is stable).
//
// cands is not changed.
func Rank(cands []Candidate) []Candidate {
	out := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if c.Replica.State != Bad {
			out = append(out, c)
		}
	}
	missing := func(c Candidate) int {
		if c.Replica.State == Missing {
			return 1
		}
		return 0
	}
	notOK := func(c Candidate) int {
		if c.Replica.State == OK {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		if d := cmp.Compare(missing(a), missing(b)); d != 0 {
			return d
		}
		if d := cmp.Compare(b.Rate, a.Rate); d != 0 { // unknown (0) last
			return d
		}
		if d := cmp.Compare(notOK(a), notOK(b)); d != 0 {
			return d
		}
		if d := b.Replica.Verified.Compare(a.Replica.Verified); d != 0 {
			return d
		}
		return cmp.Compare(a.Replica.URL, b.Replica.URL)
	})
	return out
}
