//go:build unix

package posix

import (
	"fmt"
	"io/fs"
	"os/user"
	"strconv"
	"sync"
	"syscall"

	"github.com/ferrygrid/ferry/dsi"
)

// Name caches for user and group ids; lookups can be slow (NSS).
var userNames, groupNames sync.Map // uint32 → string

// fillOwner sets the ownership and Unique fields of info from fi's stat data.
func fillOwner(info *dsi.FileInfo, fi fs.FileInfo) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	info.UID = int(st.Uid)
	info.GID = int(st.Gid)
	info.Owner = lookupName(&userNames, st.Uid, func(id string) (string, error) {
		u, err := user.LookupId(id)
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
	info.Group = lookupName(&groupNames, st.Gid, func(id string) (string, error) {
		g, err := user.LookupGroupId(id)
		if err != nil {
			return "", err
		}
		return g.Name, nil
	})
	info.Unique = fmt.Sprintf("%x-%x", uint64(st.Dev), uint64(st.Ino))
}

// lookupName returns the cached name for id, looking it up on a miss; an
// id without a name is cached as its decimal text.
func lookupName(cache *sync.Map, id uint32, lookup func(string) (string, error)) string {
	if v, ok := cache.Load(id); ok {
		return v.(string)
	}
	text := strconv.FormatUint(uint64(id), 10)
	name, err := lookup(text)
	if err != nil || name == "" {
		name = text
	}
	v, _ := cache.LoadOrStore(id, name)
	return v.(string)
}
