package pi_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/syncbuf"
)

// TestADATNotLogged: the server's debug log of commands hides the ADAT
// token (a Kerberos AP-REQ with its ticket, a GSI handshake message) as
// it hides the PASS argument.
func TestADATNotLogged(t *testing.T) {
	const token = "YIICVGSSAPITICKETTOKEN"
	var log syncbuf.Buffer
	cfg := config(seed(t))
	cfg.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := dial(t, serve(t, cfg))
	c.do("ADAT " + token)
	c.do("PASS hunter2")
	c.expect("QUIT", 221)
	out := log.String()
	if !strings.Contains(out, "ADAT ****") {
		t.Errorf("the debug log does not show the ADAT command:\n%s", out)
	}
	for _, secret := range []string{token, "hunter2"} {
		if strings.Contains(out, secret) {
			t.Errorf("the debug log holds %q:\n%s", secret, out)
		}
	}
}
