package client_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

// TestStoreInParts: a file stored as parts (StoreOptions.Part) with
// different streams each, out of order and with Restart the parts
// before, appears on a Ferry server only after the last part, byte for
// byte; the part already stored is not sent again.
func TestStoreInParts(t *testing.T) {
	f := startFerry(t)
	c := login(t, f.addr, nil)
	ctx := testCtx(t)
	data := randomBytes(t, 3<<20+17)
	size := int64(len(data))
	parts := []client.Range{{Start: 1 << 20, End: 2 << 20}, {Start: 0, End: 1 << 20}, {Start: 2 << 20, End: size}}
	var have client.RangeSet
	for i, p := range parts {
		n, err := c.StoreAt(ctx, "/f", bytes.NewReader(data), size, &client.StoreOptions{Part: p, Parallel: i + 1, Restart: have.Clone()})
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if n != p.End-p.Start {
			t.Errorf("part %d: sent %d bytes, want %d", i, n, p.End-p.Start)
		}
		have.Add(p)
		if _, err := os.Stat(filepath.Join(f.dir, "f")); i < len(parts)-1 && err == nil {
			t.Fatalf("the file appeared after part %d of %d", i, len(parts))
		}
	}
	got, err := os.ReadFile(filepath.Join(f.dir, "f"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after the parts: %d bytes, %v; want the %d sent", len(got), err, len(data))
	}

	// A part the Restart ranges hold already sends nothing, and still
	// completes the file when it is the last one.
	var first client.RangeSet
	first.Add(client.Range{Start: 0, End: 2 << 20})
	if _, err := c.StoreAt(ctx, "/g", bytes.NewReader(data), size, &client.StoreOptions{Part: client.Range{Start: 0, End: 2 << 20}, ModeE: true}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.StoreAt(ctx, "/g", bytes.NewReader(data), size, &client.StoreOptions{Part: client.Range{Start: 1 << 20, End: size}, ModeE: true, Restart: first}); err != nil || n != size-2<<20 {
		t.Fatalf("overlapping last part: sent %d, %v; want %d", n, err, size-2<<20)
	}
	if got, err := os.ReadFile(filepath.Join(f.dir, "g")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("g: %d bytes, %v", len(got), err)
	}
}
