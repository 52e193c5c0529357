package transfer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/progress"
)

// dialTogether logs in to the sessions' servers at the same time: each
// login is several round trips. A failed dial is not repeated: the
// session's next Conn returns its error, as if it had dialled then.
func dialTogether(ctx context.Context, ss ...*client.Session) {
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() { _, errs[i] = s.Conn(ctx) })
	}
	wg.Wait()
	for i, s := range ss {
		if errs[i] == nil {
			continue
		}
		dial, err := s.Dial, errs[i]
		s.Dial = func(context.Context) (*client.Conn, error) {
			s.Dial = dial
			return nil, err
		}
	}
}

// QuitTimeout bounds the wait for the reply to QUIT when a session
// ends: a server that does not answer must not hold up the end of a
// copy, or Ctrl-C.
var QuitTimeout = 5 * time.Second

// CloseSession ends a session politely, within QuitTimeout; when ctx is
// done it closes the connection without QUIT.
func CloseSession(ctx context.Context, s *client.Session) {
	qctx, cancel := context.WithTimeout(ctx, QuitTimeout)
	defer cancel()
	_ = s.Close(qctx) // closes without QUIT when ctx is done
}

// Describe renders an error for the user. A server reply becomes
// "CODE text"; GCT's structured errors are shortened to their reason and
// error string.
func Describe(err error) string {
	var re *client.ReplyError
	if errors.Is(err, client.ErrThirdPartyFTPS) {
		return progress.Printable(err.Error() + " (with -notpt)")
	}
	if !errors.As(err, &re) {
		return progress.Printable(err.Error())
	}
	r := re.Reply
	var reason, errstr string
	var lines []string
	for i, l := range r.Lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "GridFTP-Reason:"):
			reason = strings.TrimSpace(strings.TrimPrefix(l, "GridFTP-Reason:"))
		case strings.HasPrefix(l, "GridFTP-Error-String:"):
			errstr = strings.TrimSpace(strings.TrimPrefix(l, "GridFTP-Error-String:"))
		case l == "" || (i == len(r.Lines)-1 && i > 0 && strings.HasPrefix(l, "End")):
		default:
			lines = append(lines, l)
		}
	}
	text := strings.Join(lines, "; ")
	switch {
	case reason != "" && errstr != "":
		text = reason + ": " + errstr
	case errstr != "":
		text = errstr
	}
	msg := fmt.Sprintf("%03d %s", r.Code, text)
	switch {
	case errors.Is(err, client.ErrTLSRefused):
		msg = "the server refused AUTH TLS (ftps://), so nothing was sent in clear: " + msg
	case errors.Is(err, client.ErrDataProtectionRefused):
		msg = "the server refused encrypted data channels (PBSZ 0, PROT P): " + msg
	}
	return progress.Printable(msg)
}
