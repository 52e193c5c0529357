package pi

import (
	"path"
	"strings"
	"sync"
)

// Uploads records the uploads in progress on a server, by the storage
// paths they write (the target and its part file, under the account's
// home), so that other sessions cannot take part in them: a second upload
// to the same file, a rename, deletion or directory swap under it would
// let one client slip bytes into another's upload, take them, or make
// its final rename land elsewhere. The zero value is ready; nil records
// nothing.
type Uploads struct {
	mu     sync.Mutex
	active map[string]int // guarded by mu
}

// Begin records an upload writing paths; ok is false, and nothing is
// recorded, when another upload writes any of them.
func (u *Uploads) Begin(paths ...string) (end func(), ok bool) {
	if u == nil {
		return func() {}, true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, p := range paths {
		if u.active[p] > 0 {
			return nil, false
		}
	}
	if u.active == nil {
		u.active = map[string]int{}
	}
	for _, p := range paths {
		u.active[p]++
	}
	return sync.OnceFunc(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, p := range paths {
			if u.active[p]--; u.active[p] <= 0 {
				delete(u.active, p)
			}
		}
	}), true
}

// Busy reports whether an upload writes p, or a path below it.
func (u *Uploads) Busy(p string) bool {
	if u == nil {
		return false
	}
	p = path.Clean(p)
	u.mu.Lock()
	defer u.mu.Unlock()
	for a := range u.active {
		if a == p || p == "/" || strings.HasPrefix(a, p+"/") {
			return true
		}
	}
	return false
}
