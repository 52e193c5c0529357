package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

// tpReuse runs third-party batches over one pair of Conns and counts
// the set-ups each one needed.
type tpReuse struct {
	t        *testing.T
	ctx      context.Context
	src, dst peer
	sc, dc   *client.Conn
	sfl, dfl *flight
	want     [][]byte // the source files s0…
	next     int      // the next destination name
}

func newTPReuse(t *testing.T, src, dst peer, n int) *tpReuse {
	r := &tpReuse{t: t, ctx: testCtx(t), src: src, dst: dst, sfl: &flight{}, dfl: &flight{}}
	r.want = tpTree(t, src, "s", n, 99)
	r.sc = login(t, src.addr, &client.Config{Logger: slog.New(r.sfl)})
	r.dc = login(t, dst.addr, &client.Config{Logger: slog.New(r.dfl)})
	r.sfl.take()
	r.dfl.take()
	return r
}

// batch copies the source files at idx (a negative index: to a
// destination the server refuses) and returns the PASV and PORT the
// batch sent, checking every file's outcome and bytes.
func (r *tpReuse) batch(par int, idx ...int) (pasv, port int) {
	t := r.t
	t.Helper()
	files := make([]client.ThirdPartyFile, len(idx))
	names := make([]string, len(idx))
	for k, i := range idx {
		names[k] = fmt.Sprintf("d%d", r.next)
		r.next++
		dst := r.dst.remote(names[k])
		if i < 0 {
			dst = r.dst.remote("no/such/dir/f")
			i = -i
		}
		files[k] = client.ThirdPartyFile{Src: r.src.remote(fmt.Sprintf("s%d", i)), Dst: dst}
	}
	errs := client.ThirdPartyFiles(r.ctx, r.sc, r.dc, files, &client.BatchOptions{Window: 4, Parallel: par})
	for k, i := range idx {
		if i < 0 {
			var re *client.ReplyError
			if !errors.As(errs[k], &re) || re.Reply.Code/100 != 5 {
				t.Errorf("file %d to a missing directory: %v, want the server's 5xx", k, errs[k])
			}
			continue
		}
		if errs[k] != nil {
			t.Errorf("file %d: %v", k, errs[k])
			continue
		}
		if got := readAll(t, filepath.Join(r.dst.dir, names[k])); !bytes.Equal(got, r.want[i]) {
			t.Errorf("file %d (s%d): %d bytes at the destination, want %d", k, i, len(got), len(r.want[i]))
		}
	}
	scmds, _ := r.sfl.take()
	dcmds, _ := r.dfl.take()
	return count(dcmds, "PASV"), count(scmds, "PORT")
}

// expect runs a batch and checks whether it set the data channel up.
func (r *tpReuse) expect(what string, setUp bool, par int, idx ...int) {
	r.t.Helper()
	pasv, port := r.batch(par, idx...)
	want := 0
	if setUp {
		want = 1
	}
	if pasv != want || port != want {
		r.t.Errorf("%s: %d PASV and %d PORT, want %d of each", what, pasv, port, want)
	}
}

// TestThirdPartyFilesReuse: consecutive batches between the same two
// Conns share one data channel set-up; a refused file, another transfer
// on either Conn, a change of parallelism, a raw command, or the other
// direction makes the next batch set it up afresh, and every batch
// copies every byte.
func TestThirdPartyFilesReuse(t *testing.T) {
	for _, pr := range tpPairs {
		t.Run(pr.name, func(t *testing.T) {
			r := newTPReuse(t, pr.src(t), pr.dst(t), 12)
			r.expect("first batch", true, 2, 0, 1, 2, 3)
			r.expect("second batch", false, 2, 4, 5, 6, 7)
			r.expect("batch of one", false, 2, 8)
			// A refusal leaves the stream in step but still costs the
			// reuse.
			r.expect("batch with a refusal", false, 2, 9, -10, 11)
			r.expect("after a refusal", true, 2, 0, 1)
			r.expect("again", false, 2, 2, 3)
			// SIZE touches no data channel.
			if _, err := r.dc.Size(r.ctx, r.dst.remote("d0")); err != nil {
				t.Fatal(err)
			}
			r.expect("after SIZE", false, 2, 4)
			r.expect("other parallelism", true, 1, 5, 6)
			// A download from the destination server on its own data
			// channel.
			var buf bytes.Buffer
			if _, err := r.dc.Retrieve(r.ctx, r.dst.remote("d0"), &buf, nil); err != nil {
				t.Fatal(err)
			}
			r.expect("after a download on the destination", true, 1, 7, 8)
			if _, err := r.sc.Do(r.ctx, "NOOP"); err != nil {
				t.Fatal(err)
			}
			r.expect("after a raw command on the source", true, 1, 9, 10)

			// The other direction between the same Conns: a set-up of
			// its own (GCT fails a cached connection used the other
			// way), and the first direction sets up again after it.
			back := client.ThirdPartyFile{Src: r.dst.remote("d0"), Dst: r.src.remote("back")}
			if errs := client.ThirdPartyFiles(r.ctx, r.dc, r.sc, []client.ThirdPartyFile{back}, &client.BatchOptions{Parallel: 1}); errs[0] != nil {
				t.Fatalf("the other way: %v", errs[0])
			}
			if got := readAll(t, filepath.Join(r.src.dir, "back")); !bytes.Equal(got, r.want[0]) {
				t.Errorf("the other way: %d bytes, want %d", len(got), len(r.want[0]))
			}
			r.sfl.take()
			r.dfl.take()
			r.expect("after the other direction", true, 1, 11, 0)
			r.expect("last", false, 1, 1, 2, 3)
		})
	}
}

// TestThirdPartyFilesReuseBroken: a batch that stops (a missing source
// while a GCT destination waits, or a Conn closed under it) closes both
// Conns, and a batch on new Conns sets up afresh and copies everything.
func TestThirdPartyFilesReuseBroken(t *testing.T) {
	for _, pr := range tpPairs {
		t.Run(pr.name, func(t *testing.T) {
			r := newTPReuse(t, pr.src(t), pr.dst(t), 6)
			r.expect("first batch", true, 1, 0, 1)
			// The destination's control connection goes away between
			// batches: the next batch fails, and nothing is sent on the
			// source as though the channel were there.
			r.dc.Close()
			files := []client.ThirdPartyFile{{Src: r.src.remote("s2"), Dst: r.dst.remote("x")}}
			if errs := client.ThirdPartyFiles(r.ctx, r.sc, r.dc, files, nil); !errors.Is(errs[0], client.ErrClosed) {
				t.Errorf("batch on a closed Conn: %v, want ErrClosed", errs[0])
			}
			r.sc.Close()
			r.sc = login(t, r.src.addr, &client.Config{Logger: slog.New(r.sfl)})
			r.dc = login(t, r.dst.addr, &client.Config{Logger: slog.New(r.dfl)})
			r.sfl.take()
			r.dfl.take()
			r.expect("new Conns", true, 1, 2, 3)
			r.expect("reused again", false, 1, 4, 5)
		})
	}
}
