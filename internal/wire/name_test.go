package wire

import (
	"errors"
	"path"
	"path/filepath"
	"testing"
)

func TestCheckEntryName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{".hidden", true},
		{"...", true},
		{"a b", true},
		{"a\\b", true}, // a POSIX name; never a separator on the hosts Ferry runs on
		{"", false},
		{".", false},
		{"..", false},
		{"x/..", false},
		{"x/.", false},
		{"/", false},
		{"/etc", false},
		{"a/b", false},
		{"a\x00b", false},
	} {
		err := CheckEntryName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckEntryName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrUnsafeName) {
			t.Errorf("CheckEntryName(%q) = %v, not ErrUnsafeName", tc.name, err)
		}
	}
}

// FuzzCheckEntryName checks the property the callers rely on: a name
// it accepts, joined onto a directory, names a child of that directory.
func FuzzCheckEntryName(f *testing.F) {
	for _, s := range []string{"a", "..", "x/..", "x/.", "", "a\x00", "./a", "a/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if CheckEntryName(name) != nil {
			return
		}
		const root = "/dest/dir"
		if j := path.Join(root, name); path.Dir(j) != root || path.Base(j) != name {
			t.Fatalf("accepted %q: path.Join gives %q", name, j)
		}
		j := filepath.Join(root, name)
		rel, err := filepath.Rel(root, j)
		if err != nil || rel != name {
			t.Fatalf("accepted %q: filepath.Join gives %q (rel %q, %v)", name, j, rel, err)
		}
	})
}
