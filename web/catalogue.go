package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/ferrygrid/ferry/internal/replica"
)

// The replica catalogue: any logged-in user browses the logical file
// names (LFNs) as a directory tree and sees one LFN's replicas. The
// catalogue is the site's, shared by its users as the ferry replica
// command shares it; nothing here changes it, but a copy of an LFN
// (catalogue_copy.go) marks the replicas it tried ok or bad, as ferry cp
// does.

// catalogueLimit is the default page of a catalogue listing; a request
// may ask for up to maxCatalogueLimit.
const (
	catalogueLimit    = 200
	maxCatalogueLimit = 1000
	// maxReplicas bounds the replicas of one LFN that a reply lists.
	maxReplicas = 1000
)

// catalogueChild is one name in a catalogue listing.
type catalogueChild struct {
	Name     string `json:"name"`
	LFN      string `json:"lfn"` // its path, "/cms/run1"
	Dir      bool   `json:"dir"`
	Size     int64  `json:"size,omitempty"`
	Alg      string `json:"alg,omitempty"`
	Replicas int    `json:"replicas,omitempty"`
	OK       int    `json:"ok,omitempty"`
}

// catalogueList is the reply of GET /api/catalogue/list.
type catalogueList struct {
	Dir     string           `json:"dir"`
	Entries []catalogueChild `json:"entries"`
	// Next is the cursor of the next page (the from parameter); ""
	// when this is the last.
	Next string `json:"next,omitempty"`
}

// catalogueReplica is one replica in GET /api/catalogue/lfn's reply.
type catalogueReplica struct {
	URL      string    `json:"url"`
	Size     int64     `json:"size"`
	Sum      string    `json:"sum"`
	State    string    `json:"state"`
	Verified time.Time `json:"verified"` // zero: never
	Added    time.Time `json:"added"`
	Note     string    `json:"note,omitempty"`
}

// catalogueEntry is the reply of GET /api/catalogue/lfn.
type catalogueEntry struct {
	LFN      string             `json:"lfn"`
	Size     int64              `json:"size"`
	Alg      string             `json:"alg"`
	Sum      string             `json:"sum"`
	Created  time.Time          `json:"created"`
	Replicas []catalogueReplica `json:"replicas"`
	// More counts the replicas left out beyond maxReplicas.
	More int `json:"more,omitempty"`
}

// lfnParam reads an LFN path from the query parameter name: a path
// ("/cms/f") or a lfn: URL; "" means def.
func lfnParam(r *http.Request, name, def string) (string, error) {
	v := r.URL.Query().Get(name)
	if err := checkText(name, v, maxPathBytes); err != nil {
		return "", err
	}
	switch {
	case v == "":
		return def, nil
	case replica.IsLFN(v):
		return replica.ParseLFN(v)
	default:
		return replica.ParseLFN(replica.Scheme + v)
	}
}

// catalogue answers 404 and returns nil when the app has no catalogue.
func (a *App) catalogue(w http.ResponseWriter) *replica.Catalogue {
	if a.cfg.Catalogue == nil {
		writeError(w, http.StatusNotFound, "this ferry web has no replica catalogue")
	}
	return a.cfg.Catalogue
}

// catalogueList serves GET /api/catalogue/list?dir=&from=&limit=: the
// names directly below the LFN directory dir ("/" by default).
func (a *App) catalogueList(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	c := a.catalogue(w)
	if c == nil {
		return
	}
	dir, err := lfnParam(r, "dir", "/")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit := catalogueLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCatalogueLimit {
			writeError(w, http.StatusBadRequest, "limit must be 1 to "+strconv.Itoa(maxCatalogueLimit))
			return
		}
		limit = n
	}
	from := r.URL.Query().Get("from")
	if len(from) > 8192 {
		writeError(w, http.StatusBadRequest, "from: too long")
		return
	}
	cs, next, err := c.Children(r.Context(), dir, from, limit)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, replica.ErrBadCursor) {
			code = http.StatusBadRequest
		}
		writeError(w, code, err.Error())
		return
	}
	out := catalogueList{Dir: dir, Entries: make([]catalogueChild, 0, len(cs)), Next: next}
	for _, ch := range cs {
		out.Entries = append(out.Entries, catalogueChild{Name: ch.Name, LFN: replica.Join(dir, ch.Name), Dir: ch.Dir,
			Size: ch.Size, Alg: ch.Alg, Replicas: ch.Replicas, OK: ch.OK})
	}
	writeJSON(w, http.StatusOK, out)
}

// catalogueLFN serves GET /api/catalogue/lfn?lfn=: one LFN with its
// replicas; 404 for an LFN the catalogue does not hold.
func (a *App) catalogueLFN(w http.ResponseWriter, r *http.Request, u *userState, s *session) {
	c := a.catalogue(w)
	if c == nil {
		return
	}
	lfn, err := lfnParam(r, "lfn", "")
	if err == nil && lfn == "" {
		err = errors.New("which LFN? (lfn=/path)")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	e, err := c.Lookup(r.Context(), lfn)
	if errors.Is(err, replica.ErrNotFound) {
		writeError(w, http.StatusNotFound, "unknown LFN "+replica.Format(lfn))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := catalogueEntry{LFN: e.LFN, Size: e.Size, Alg: e.Alg, Sum: e.Sum, Created: e.Created, Replicas: []catalogueReplica{}}
	for i, rp := range e.Replicas {
		if i == maxReplicas {
			out.More = len(e.Replicas) - i
			break
		}
		out.Replicas = append(out.Replicas, catalogueReplica{URL: rp.URL, Size: rp.Size, Sum: rp.Sum, State: string(rp.State),
			Verified: rp.Verified, Added: rp.Added, Note: rp.Note})
	}
	writeJSON(w, http.StatusOK, out)
}
