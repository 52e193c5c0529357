package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrBadCursor is matched by the error of Children for a cursor that is
// not one it returned for that directory.
var ErrBadCursor = errors.New("bad listing cursor")

// Child is one name directly below an LFN directory: a logical file, or
// a directory (a prefix that LFNs lie below; the catalogue stores no
// directories of its own).
type Child struct {
	Name string // the last path element
	Dir  bool
	// Size, Alg, Replicas (the count) and OK (the count of OK ones)
	// describe a file; they are zero for a directory.
	Size     int64
	Alg      string
	Replicas int
	OK       int
}

// maxBrowse bounds the children one call of Children returns.
const maxBrowse = 1000

// Children lists the names directly below the LFN directory dir ("/"
// for the top), in the byte order of their LFNs, at most limit of them
// (1 to 1000; others are clamped), starting after the cursor from (""
// for the first page). It returns the cursor of the next page, "" when
// there is none. A name that is both a file and a directory (/a and
// /a/b registered) is listed twice. The work done is bounded by the
// children listed, not by the LFNs below them: a directory's subtree is
// skipped with one query.
func (c *Catalogue) Children(ctx context.Context, dir, from string, limit int) ([]Child, string, error) {
	if err := checkPath(dir); err != nil {
		return nil, "", fmt.Errorf("replica: %s: %v", Format(dir), err)
	}
	limit = min(max(limit, 1), maxBrowse)
	below := dir + "/"
	if dir == "/" {
		below = "/"
	}
	// Every LFN below dir lies in [below, end): '0' follows '/'.
	end := below[:len(below)-1] + "0"
	lo, incl := below, false
	if from != "" {
		// A cursor is the key to go on from: ">key" after it, "=key" at it.
		if len(from) < 2 || (from[0] != '>' && from[0] != '=') || !strings.HasPrefix(from[1:], below) {
			return nil, "", fmt.Errorf("replica: %q for %s: %w", from, Format(dir), ErrBadCursor)
		}
		lo, incl = from[1:], from[0] == '='
	}
	collate := ""
	if c.db.Postgres {
		collate = ` COLLATE "C"`
	}
	var out []Child
	for len(out) <= limit {
		op := ">"
		if incl {
			op = ">="
		}
		batch := min(limit+1-len(out), 64)
		rows, err := c.db.QueryContext(ctx, c.db.Rebind(`SELECT l.lfn, l.size, l.cksum_alg,
	(SELECT count(*) FROM replicas r WHERE r.lfn = l.lfn),
	(SELECT count(*) FROM replicas r WHERE r.lfn = l.lfn AND r.state = 'ok')
FROM replica_lfns l WHERE l.lfn`+collate+` `+op+` ? AND l.lfn`+collate+` < ?
ORDER BY l.lfn`+collate+` LIMIT ?`), lo, end, batch)
		if err != nil {
			return nil, "", fmt.Errorf("replica: %w", err)
		}
		n, skipped := 0, false
		for rows.Next() {
			var lfn string
			var ch Child
			if err := rows.Scan(&lfn, &ch.Size, &ch.Alg, &ch.Replicas, &ch.OK); err != nil {
				rows.Close()
				return nil, "", fmt.Errorf("replica: %w", err)
			}
			n++
			rest := lfn[len(below):]
			if name, _, ok := strings.Cut(rest, "/"); ok {
				out = append(out, Child{Name: name, Dir: true})
				// Skip the directory's subtree: on at below+name+"0".
				lo, incl, skipped = below+name+"0", true, true
				break
			}
			ch.Name = rest
			out = append(out, ch)
			lo, incl = lfn, false
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, "", fmt.Errorf("replica: %w", err)
		}
		if n < batch && !skipped {
			break // the end of the directory
		}
	}
	if len(out) <= limit {
		return out, "", nil
	}
	// One child too many was read: the next page starts at it.
	last := out[limit]
	out = out[:limit]
	if last.Dir {
		return out, "=" + below + last.Name + "/", nil
	}
	return out, "=" + below + last.Name, nil
}
