package pi

// One place maps errors to reply codes (house style rule 24). Storage
// errors are dsi sentinels; transfer errors are xfer types.

import (
	"errors"
	"runtime/debug"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/wire"
)

// fsError answers a failed storage operation on the client's path name.
// Unexpected errors are logged and answered without internal detail.
func fsError(s *session, err error, name string) wire.Reply {
	if name == "" {
		name = s.cwd
	}
	switch {
	case errors.Is(err, dsi.ErrNotExist):
		return ok(550, "%s: No such file or directory.", name)
	case errors.Is(err, dsi.ErrReadOnly):
		return ok(550, "%s: Permission denied (read-only access).", name)
	case errors.Is(err, dsi.ErrPermission):
		return ok(550, "%s: Permission denied.", name)
	case errors.Is(err, dsi.ErrIsDir):
		return ok(550, "%s: Is a directory.", name)
	case errors.Is(err, dsi.ErrNotDir):
		return ok(550, "%s: Not a directory.", name)
	case errors.Is(err, dsi.ErrNotEmpty):
		// Before ErrExist: an ENOTEMPTY cause also matches fs.ErrExist.
		return ok(550, "%s: Directory not empty.", name)
	case errors.Is(err, dsi.ErrExist):
		return ok(553, "%s: File exists.", name)
	case errors.Is(err, dsi.ErrNoSpace):
		return ok(452, "%s: Insufficient storage space.", name)
	case errors.Is(err, dsi.ErrInvalid):
		return ok(553, "%s: File name not allowed.", name)
	case errors.Is(err, dsi.ErrNotSupported):
		return ok(502, "%s: Operation not supported by this storage.", name)
	}
	s.log.Error("storage error", "path", name, "err", err)
	return ok(451, "%s: Local error in processing.", name)
}

func stack() string { return string(debug.Stack()) }
