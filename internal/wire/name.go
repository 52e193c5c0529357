package wire

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsafeName is the reason a listed name is refused: it is empty,
// "." or "..", or holds a "/" or a NUL, so joined onto a directory it
// would name something other than an entry of that directory.
var ErrUnsafeName = errors.New("unsafe file name in a listing")

// CheckEntryName returns an error matching ErrUnsafeName unless name is
// a single path element a directory can hold. Names come from a peer
// (MLSD, LIST, NLST) and are joined onto local paths: "x/.." must never
// become "..".
func CheckEntryName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: %q", ErrUnsafeName, name)
	}
	return nil
}
