//go:build unix && !linux

package privsep

import (
	"context"
	"fmt"

	"github.com/ferrygrid/ferry/dsi"
)

// Start is not available on this system: the helper needs Linux
// (SOCK_SEQPACKET socket pairs and a parent-death signal).
func Start(ctx context.Context, exe, root, account string) (*FS, error) {
	return StartOptions(ctx, exe, root, account, Options{})
}

// StartOptions is not available on this system; see [Start].
func StartOptions(ctx context.Context, exe, root, account string, opts Options) (*FS, error) {
	return nil, fmt.Errorf("privsep: acting as another user: %w", dsi.ErrNotSupported)
}
