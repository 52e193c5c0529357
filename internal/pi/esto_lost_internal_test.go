package pi

// An ESTO with modules checks for a lost control connection before its
// result is put in place, as STOR does (finding 3 of the outside review
// of 2026-11-27).

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// bytesDTP is a DTP whose uploads bring data, ended in order.
type bytesDTP struct{ data []byte }

func (d *bytesDTP) Passive(context.Context, bool) (netip.AddrPort, error) {
	return netip.AddrPort{}, nil
}
func (d *bytesDTP) Active(context.Context, []netip.AddrPort) error { return nil }
func (d *bytesDTP) Send(context.Context, *xfer.Request, dsi.Reader, func(xfer.Event)) (int64, error) {
	return 0, xfer.ErrNoDataAddress
}
func (d *bytesDTP) Receive(ctx context.Context, req *xfer.Request, dst dsi.Writer, notify func(xfer.Event)) (int64, error) {
	notify(xfer.Event{Kind: xfer.EventStarted})
	n, err := dst.WriteAt(d.data, 0)
	return int64(n), err
}
func (d *bytesDTP) SetBuffer(int)             {}
func (d *bytesDTP) SetSecurity(*dcsec.Config) {}
func (d *bytesDTP) Close() error              { return nil }

// losingStorage calls lose when a part file is created: the control
// connection is found gone while the chain writes its result, after the
// data channel's end was checked.
type losingStorage struct {
	dsi.Storage
	lose func()
}

func (l *losingStorage) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	if xfer.IsPartName(name) {
		l.lose()
	}
	return l.Storage.Create(ctx, name, opts)
}

// TestModuleESTOControlLostBeforeRename: the control connection is found
// lost while the chain decodes (the reader saw it end between the data
// transfer and the chain, when no command was there to cancel): the
// decoded file is not put in place, the old one stays, and the reply is
// 426.
func TestModuleESTOControlLostBeforeRename(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	w, err := st.Create(ctx, "/f", dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteAt([]byte("the old file"), 0)
	w.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("the new content, complete"))
	zw.Close()

	srv, cli := net.Pipe()
	defer cli.Close()
	defer srv.Close()
	go io.Copy(io.Discard, cli) // the replies written meanwhile (150)
	s := newSession(srv, &Config{AllowedModules: []string{"gzip"}})
	fs := &losingStorage{Storage: st, lose: func() { s.lost.Store(true) }}
	s.fs = fs
	s.acct = &Account{Name: "test", Storage: fs, Writable: true}
	s.dtp = &bytesDTP{data: gz.Bytes()}
	s.typ = xfer.TypeImage

	r, started := s.storeModule(ctx, `gzip="" /f`)
	if !started || r.Code != 426 {
		t.Errorf("ESTO with the control connection lost: %v (started %v); want 426", r, started)
	}
	rd, err := st.Open(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got, _ := io.ReadAll(io.NewSectionReader(rd, 0, rd.Size()))
	if string(got) != "the old file" {
		t.Errorf("/f = %q: the result was put in place after the control connection was lost", got)
	}
	list, _ := st.ReadDir(ctx, "/")
	for _, e := range list {
		if strings.HasPrefix(e.Name, ".") {
			t.Errorf("%s left behind", e.Name)
		}
	}
}
