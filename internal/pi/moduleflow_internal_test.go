package pi

// ESTO runs its module chain while the data arrives (moduleflow): the
// first file of a tar is in place before the data channel has ended.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// gatedDTP brings an upload in two parts and sends the second only once
// ready is closed (or gives up after a minute).
type gatedDTP struct {
	bytesDTP
	first, second []byte
	ready         <-chan struct{}
}

func (d *gatedDTP) Receive(ctx context.Context, req *xfer.Request, dst dsi.Writer, notify func(xfer.Event)) (int64, error) {
	notify(xfer.Event{Kind: xfer.EventStarted})
	// The second part first: out of order, as MODE E may bring it.
	if _, err := dst.WriteAt(d.second, int64(len(d.first))); err != nil {
		return 0, err
	}
	if _, err := dst.WriteAt(d.first, 0); err != nil {
		return 0, err
	}
	select {
	case <-d.ready:
	case <-time.After(time.Minute):
		return 0, &xfer.DataError{Err: errors.New("the first file was not unpacked while the data arrived")}
	}
	return int64(len(d.first) + len(d.second)), nil
}

// renameWatch closes renamed once a file is renamed to name.
type renameWatch struct {
	dsi.Storage
	name    string
	once    sync.Once
	renamed chan struct{}
}

func (r *renameWatch) Rename(ctx context.Context, from, to string) error {
	err := r.Storage.Rename(ctx, from, to)
	if err == nil && to == r.name {
		r.once.Do(func() { close(r.renamed) })
	}
	return err
}

// TestModuleESTOUnpacksWhileArriving: ESTO tar puts the archive's first
// file in place before the data channel has ended (the upload waits for
// it), and still unpacks the rest once it comes.
func TestModuleESTOUnpacksWhileArriving(t *testing.T) {
	ctx := context.Background()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, name := range []string{"first", "second"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(name)), Mode: 0o644})
		tw.Write([]byte(name))
	}
	tw.Close()
	data := b.Bytes()
	split := 2 * 512 // the first entry: header and padded data

	srv, cli := net.Pipe()
	defer cli.Close()
	defer srv.Close()
	go io.Copy(io.Discard, cli)
	s := newSession(srv, &Config{AllowedModules: []string{"tar"}})
	st := &renameWatch{Storage: memory.New(), name: "/t/first", renamed: make(chan struct{})}
	s.fs = st
	s.acct = &Account{Name: "test", Storage: st, Writable: true}
	s.dtp = &gatedDTP{first: data[:split], second: data[split:], ready: st.renamed}
	s.typ = xfer.TypeImage

	if r, _ := s.storeModule(ctx, `tar="" /t`); r.Code != 226 {
		t.Fatalf("ESTO tar: %v", r)
	}
	for _, name := range []string{"first", "second"} {
		rd, err := st.Open(ctx, "/t/"+name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(io.NewSectionReader(rd, 0, rd.Size()))
		rd.Close()
		if string(got) != name {
			t.Errorf("/t/%s = %q", name, got)
		}
	}
}
