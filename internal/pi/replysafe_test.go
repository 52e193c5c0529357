package pi_test

import (
	"strings"
	"testing"
)

// TestReplyEchoIsSafe: text a peer sent (a path, an argument) comes back in
// reply text with its control characters written visibly, never raw, while
// UTF-8 names (RFC 2640) come back unchanged.
func TestReplyEchoIsSafe(t *testing.T) {
	c := dial(t, serve(t, config(seed(t))))
	c.login()
	for _, tt := range []struct {
		line string
		code int
		want string
	}{
		{"RETR a\x00b", 550, `a\x00b`},
		{"SIZE /\x1b[2J\x07", 550, `/\x1b[2J\x07`},
		{"CWD /x\x7f\u009by", 550, `/x\x7f\u009by`},
		{"MKD /d\x01", 257, `"/d\x01"`},
		{"MKD /données-日本", 257, `"/données-日本"`},
	} {
		r := c.expect(tt.line, tt.code)
		text := r.Text()
		if !strings.Contains(text, tt.want) {
			t.Errorf("%q: reply %q does not hold %q", tt.line, text, tt.want)
		}
		for _, ch := range text {
			if ch < 0x20 && ch != '\n' || ch >= 0x7f && ch <= 0x9f {
				t.Errorf("%q: reply %q holds control character %U", tt.line, text, ch)
			}
		}
	}
}
