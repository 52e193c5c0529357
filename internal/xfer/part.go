package xfer

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
)

// PartSuffix ends the name of the hidden file a Ferry server writes an
// upload to until it is complete (docs/extensions.md).
const PartSuffix = ".ferry-part"

// maxPartBase bounds the part of a name kept in its part file's name, so
// that the latter fits in a file name (255 bytes on most file systems).
const maxPartBase = 200

// PartName is the hidden file an upload to p is written to until it is
// complete: "." + base + PartSuffix beside it (a long base is cut and a
// hash of it added). It is the same for every upload to p, so that a
// restart finds it, and a client resuming a stream upload asks its SIZE.
func PartName(p string) string {
	dir, base := path.Split(p)
	if len(base) > maxPartBase {
		sum := sha256.Sum256([]byte(base))
		base = base[:maxPartBase] + "." + hex.EncodeToString(sum[:8])
	}
	return dir + "." + base + PartSuffix
}

// IsPartName reports whether p names an upload's part file.
func IsPartName(p string) bool {
	base := path.Base(p)
	return strings.HasPrefix(base, ".") && strings.HasSuffix(base, PartSuffix) && len(base) > len(PartSuffix)+1
}
