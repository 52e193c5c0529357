package pi_test

// Once a server's shutdown has begun no command starts, not even one a
// client pipelined before it (finding F2 of the outside review of
// 2026-11-27): the queued commands get 421 and the session closes, while
// the transfer already running finishes.

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// gateDTP is a DTP whose uploads wait for gate to close, then store
// data: an upload that runs as long as the test wants.
type gateDTP struct {
	pi.DTP
	gate chan struct{}
	data []byte
}

func (d *gateDTP) Passive(ctx context.Context, ipv4 bool) (netip.AddrPort, error) {
	return netip.MustParseAddrPort("127.0.0.1:9"), nil
}

func (d *gateDTP) Receive(ctx context.Context, req *xfer.Request, dst dsi.Writer, notify func(xfer.Event)) (int64, error) {
	notify(xfer.Event{Kind: xfer.EventStarted})
	select {
	case <-d.gate:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	n, err := dst.WriteAt(d.data, 0)
	return int64(n), err
}

func (d *gateDTP) Close() error { return nil }

// TestShutdownRefusesPipelinedCommands: commands a client pipelined
// behind a running upload, and queued by the server, are not run once the
// shutdown has begun: the upload finishes (226), then every reply is 421
// and the session closes; neither the MKD, the second STOR, the DELE nor
// the rename has any effect.
func TestShutdownRefusesPipelinedCommands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := seed(t)
		cfg := config(st)
		dtp := &gateDTP{gate: make(chan struct{}), data: []byte("all of it")}
		cfg.NewDTP = func(net.Conn) pi.DTP { return dtp }
		srv, cli := net.Pipe()
		defer cli.Close()
		ctx, shutdown := context.WithCancel(context.Background())
		defer shutdown()
		done := make(chan error, 1)
		go func() { done <- pi.Serve(ctx, srv, cfg) }()
		rr := wire.NewReplyReader(cli)
		expect := func(line string, code int) {
			t.Helper()
			if line != "" {
				cli.Write([]byte(line + "\r\n"))
			}
			if r, err := rr.ReadReply(); err != nil || r.Code != code {
				t.Fatalf("%s: %v %v; want %d", line, r, err, code)
			}
		}
		expect("", 220)
		expect("USER anonymous", 331)
		expect("PASS x@y", 230)
		expect("PASV", 227)
		expect("STOR /running", 150)
		// The upload runs until the gate opens: these wait behind it.
		queued := []string{"MKD /newdir", "PASV", "STOR /second", "DELE /a.txt", "RNFR /dir", "RNTO /moved", "NOOP"}
		cli.Write([]byte(strings.Join(queued, "\r\n") + "\r\n"))
		synctest.Wait() // the reader has queued them all and waits for more
		shutdown()
		close(dtp.gate)
		expect("", 226)
		for i := range queued {
			r, err := rr.ReadReply()
			if err != nil {
				t.Fatalf("reply to %q: %v; want 421", queued[i], err)
			}
			if r.Code != 421 || r.Text() != "Service not available, closing control connection." {
				t.Fatalf("reply to %q after the shutdown: %d %q; want 421", queued[i], r.Code, r.Text())
			}
		}
		if r, err := rr.ReadReply(); err == nil {
			t.Fatalf("after the 421 replies: %v; want the session closed", r)
		}
		<-done

		bg := context.Background()
		if got := readAll(t, st, "/running"); string(got) != "all of it" {
			t.Errorf("/running = %q; the running upload should have finished", got)
		}
		for _, p := range []string{"/newdir", "/second", "/moved"} {
			if _, err := st.Stat(bg, p); err == nil {
				t.Errorf("%s exists: a command queued before the shutdown ran", p)
			}
		}
		for _, p := range []string{"/a.txt", "/dir"} {
			if _, err := st.Stat(bg, p); err != nil {
				t.Errorf("%s: %v: a command queued before the shutdown ran", p, err)
			}
		}
	})
}

// readAll returns the content of name in st.
func readAll(t *testing.T, st dsi.Storage, name string) []byte {
	t.Helper()
	r, err := st.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer r.Close()
	b := make([]byte, r.Size())
	n, err := r.ReadAt(b, 0)
	if err != nil && n < len(b) {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}
