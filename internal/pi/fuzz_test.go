package pi_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/wire"
)

// FuzzCommand sends one arbitrary command line to a logged-in session: the
// session must answer with a well-formed reply without control characters
// and never panic (a panic is answered 421 "Internal server error").
//
// An input costs the session about 0.1 ms of CPU and waits for no timer;
// most of a fuzzing run's CPU goes to the fuzzing engine (a coverage
// snapshot per input, the coordinator's RPC to its workers), and a worker
// with several threads spends much of the rest waking them. Single-threaded
// workers go faster; -parallel N runs N of them, for N cores:
//
//	GOMAXPROCS=1 go test -run '^$' -fuzz '^FuzzCommand$' -parallel 1 ./internal/pi/
func FuzzCommand(f *testing.F) {
	for _, s := range []string{
		"NOOP", "RETR /a.txt", "REST 0-5,7-9", "PORT 127,0,0,1,4,1", "EPRT |2|::1|5|",
		"CKSM MD5 0 -1 /a.txt", "SITE CHMOD 777 /a.txt", "OPTS RETR Parallelism=2;",
		"MLST /dir", "CWD ../..", "RNFR /a.txt", "MFMT 20250101000000.5 /a.txt", "TYPE L 8",
		"SIZE /\x00", "HELP SITE", "ALLO 5 R 6", "STAT /dir",
	} {
		f.Add(s)
	}
	st := seed(f)
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") || strings.HasPrefix(strings.ToUpper(line), "QUIT") {
			t.Skip()
		}
		cfg := config(st)
		srv, cli := net.Pipe()
		defer cli.Close()
		done := make(chan error, 1)
		go func() { done <- pi.Serve(context.Background(), srv, cfg) }()
		cli.SetDeadline(time.Now().Add(20 * time.Second))
		rr := wire.NewReplyReader(cli)
		rr.ReadReply()
		for _, l := range []string{"USER anonymous", "PASS x"} {
			cli.Write([]byte(l + "\r\n"))
			rr.ReadReply()
		}
		cli.Write([]byte(line + "\r\n"))
		r, err := rr.ReadReply()
		if err != nil {
			t.Fatalf("%q: no reply: %v", line, err)
		}
		if r.Code == 421 {
			t.Fatalf("%q: %v", line, r)
		}
		// What the peer sent comes back, if at all, with its control
		// characters written visibly.
		for _, l := range r.Lines {
			for i := 0; i < len(l); i++ {
				if c := l[i]; c < 0x20 || c == 0x7f {
					t.Fatalf("%q: reply line %q holds a control character", line, l)
				}
			}
		}
		cli.Close()
		<-done
	})
}
