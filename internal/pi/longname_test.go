package pi_test

import (
	"context"
	"strings"
	"testing"
)

// An upload to a name longer than a file system takes is refused before
// any data is taken: otherwise the part file is made (its name is
// shortened), the rename onto the name fails, and the data stays aside
// under a hidden name.
func TestStoreNameTooLong(t *testing.T) {
	st := seed(t)
	c := dial(t, serve(t, config(st)))
	c.expect("USER anonymous", 331)
	c.expect("PASS x", 230)
	long := "/" + strings.Repeat("B", 300)
	for _, cmd := range []string{"STOR ", "APPE ", "ESTO A 0 "} {
		r := c.expect(cmd+long, 553)
		if !strings.Contains(r.Text(), "too long") {
			t.Errorf("%s: %q", cmd, r.Text())
		}
	}
	ents, err := st.ReadDir(context.Background(), "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name, "BBBB") {
			t.Errorf("left in the root: %s", e.Name)
		}
	}
	c.expect("STOR /"+strings.Repeat("B", 255), 425) // accepted: no data connection
}
