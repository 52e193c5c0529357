package pi

// One place maps errors to reply codes (house style rule 24). Storage
// errors are dsi sentinels; transfer errors are xfer types.

import (
	"errors"
	"runtime/debug"
	"strings"

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
	// Refusals of an upload in parts (parts.go).
	case errors.Is(err, errPartOther):
		return ok(450, "%s: %s; try again later.", name, partText(err))
	case errors.Is(err, errPartFull):
		return ok(452, "%s: %s; try again later.", name, partText(err))
	case errors.Is(err, errPartSize):
		return ok(554, "%s: %s.", name, partText(err))
	case errors.Is(err, errPartNone), errors.Is(err, errPartNotHeld), errors.Is(err, errPartChanged):
		return ok(550, "%s: %s; send the file again from its start.", name, partText(err))
	}
	s.log.Error("storage error", "path", name, "err", err)
	return ok(451, "%s: Local error in processing.", name)
}

// partText is the text of a refusal of an upload in parts, for a reply.
func partText(err error) string { return strings.TrimPrefix(err.Error(), "pi: ") }

func stack() string { return string(debug.Stack()) }
