package client

import (
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// TestListOSType: LIST lines of FIFOs, sockets and devices get the
// OS-specific type MLSD would give, never "" (which reads as a file).
func TestListOSType(t *testing.T) {
	for line, want := range map[string]string{
		"prw-r--r--   1 u g            0 Jan  1  2024 fifo": wire.TypeFIFO,
		"srwxr-xr-x   1 u g            0 Jan  1  2024 sock": wire.TypeSocket,
		"crw-rw-rw-   1 u g            0 Jan  1  2024 null": wire.TypeCharDevice,
		"brw-rw----   1 u g            0 Jan  1  2024 sda":  wire.TypeBlockDevice,
		"  Drw-r--r-- 1 u g            0 Jan  1  2024 door": "OS.unix=other",
	} {
		e, err := wire.ParseLISTLine(line, time.Now())
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if e.Type != "" {
			t.Fatalf("%q: ParseLISTLine type %q", line, e.Type)
		}
		if got := listOSType(line); got != want {
			t.Errorf("%q: type %q, want %q", line, got, want)
		}
	}
}
