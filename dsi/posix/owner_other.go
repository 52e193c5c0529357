//go:build !unix

package posix

import (
	"io/fs"

	"github.com/ferrygrid/ferry/dsi"
)

// fillOwner leaves ownership unknown where there is no stat(2).
func fillOwner(info *dsi.FileInfo, fi fs.FileInfo) {}
