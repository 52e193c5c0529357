//go:build unix

package posix

import (
	"fmt"
	"io/fs"
	"os/user"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ferrygrid/ferry/dsi"
)

// Name caches for user and group ids; lookups can be slow (NSS).
var userNames, groupNames sync.Map // uint32 → string

// fillOwner sets the ownership and Unique fields of info from fi's stat data.
func fillOwner(info *dsi.FileInfo, fi fs.FileInfo) {
	var uid, gid uint32
	var dev, ino uint64
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		uid, gid, dev, ino = st.Uid, st.Gid, uint64(st.Dev), uint64(st.Ino)
	case *unix.Stat_t: // the fast paths' (beneath_linux.go)
		uid, gid, dev, ino = st.Uid, st.Gid, uint64(st.Dev), uint64(st.Ino)
	default:
		return
	}
	info.UID = int(uid)
	info.GID = int(gid)
	info.Owner = lookupName(&userNames, uid, func(id string) (string, error) {
		u, err := user.LookupId(id)
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
	info.Group = lookupName(&groupNames, gid, func(id string) (string, error) {
		g, err := user.LookupGroupId(id)
		if err != nil {
			return "", err
		}
		return g.Name, nil
	})
	info.Unique = fmt.Sprintf("%x-%x", dev, ino)
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
