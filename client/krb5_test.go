package client

import (
	"errors"
	"strings"
	"testing"
)

// TestKerberosUnprotectedReplyError: a positive reply in clear after
// authentication is ErrUnprotectedReply, and the error names the
// session's mechanism (it used to say GSI in Kerberos sessions).
func TestKerberosUnprotectedReplyError(t *testing.T) {
	for _, c := range []struct {
		mech, other string
		open        func(string) ([]byte, error)
	}{
		{"Kerberos", "GSI", newUnwrapReader(nil, "Kerberos", (&krbState{}).unwrap, "631", "632").open},
		{"GSI", "Kerberos", newUnwrapReader(nil, "GSI", nil, "631", "632", "633").open},
	} {
		_, err := c.open("230 User logged in.")
		if !errors.Is(err, ErrUnprotectedReply) {
			t.Fatalf("%s: %v, want ErrUnprotectedReply", c.mech, err)
		}
		if msg := err.Error(); !strings.Contains(msg, c.mech) || strings.Contains(msg, c.other) {
			t.Errorf("%s session: %q", c.mech, msg)
		}
	}
}
