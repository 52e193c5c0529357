package client_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

// TestThirdParty copies between two servers (Ferry and GCT, each way,
// and Ferry to Ferry) in stream mode, MODE E with 4 connections, and a
// partial copy, and checks contents and the command sequence of
// protocol.md §14.1.
func TestThirdParty(t *testing.T) {
	pairs := []struct {
		name     string
		src, dst func(t *testing.T) peer
	}{
		{"ferry-ferry", ferryPeer, ferryPeer},
		{"ferry-gct", ferryPeer, gctPeer},
		{"gct-ferry", gctPeer, ferryPeer},
	}
	const size = 6<<20 + 333
	for _, pr := range pairs {
		t.Run(pr.name, func(t *testing.T) {
			src, dst := pr.src(t), pr.dst(t)
			data := seeded(size, 5)
			writeShared(t, filepath.Join(src.dir, "src"), data)
			for _, tc := range []struct {
				name string
				opts client.ThirdPartyOptions
			}{
				{"stream", client.ThirdPartyOptions{}},
				{"p4", client.ThirdPartyOptions{Parallel: 4}},
				{"partial", client.ThirdPartyOptions{Offset: 1000, Length: 5 << 20}},
				{"p4-partial", client.ThirdPartyOptions{Parallel: 4, Offset: 12345, Length: 3 << 20}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx := testCtx(t)
					sc, srec := loginRec(t, src.addr)
					dc, drec := loginRec(t, dst.addr)
					srec.take()
					drec.take()
					name := "dst-" + tc.name
					var prog []client.Progress
					o := tc.opts
					o.Progress = func(p client.Progress) { prog = append(prog, p) }
					n, err := client.ThirdParty(ctx, sc, src.remote("src"), dc, dst.remote(name), &o)
					want := data
					if o.Length > 0 {
						want = data[o.Offset : o.Offset+o.Length]
					}
					if err != nil || n != int64(len(want)) {
						t.Fatalf("ThirdParty = %d, %v; want %d", n, err, len(want))
					}
					got := readAll(t, filepath.Join(dst.dir, name))
					if o.Offset > 0 {
						if int64(len(got)) != o.Offset+o.Length {
							t.Fatalf("destination has %d bytes, want %d", len(got), o.Offset+o.Length)
						}
						got = got[o.Offset:]
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("destination differs (%d bytes, want %d)", len(got), len(want))
					}
					scmds, _ := srec.take()
					dcmds, _ := drec.take()
					checkThirdPartyCommands(t, scmds, dcmds, o)
					// Both Conns stay usable.
					if _, err := sc.Size(ctx, src.remote("src")); err != nil {
						t.Errorf("source Conn after the copy: %v", err)
					}
					if _, err := dc.Size(ctx, dst.remote(name)); err != nil {
						t.Errorf("destination Conn after the copy: %v", err)
					}
				})
			}
		})
	}
}

func ferryPeer(t *testing.T) peer { return startFerry(t).peer() }

// checkThirdPartyCommands checks the order of §14.1.
func checkThirdPartyCommands(t *testing.T, src, dst []string, o client.ThirdPartyOptions) {
	t.Helper()
	verbs := func(cmds []string) []string {
		var out []string
		for _, c := range cmds {
			v, _, _ := strings.Cut(c, " ")
			if v == "OPTS" || v == "TREV" {
				v = c[:strings.IndexByte(c+" ", ' ')] + " " + strings.Fields(c)[1]
			}
			out = append(out, v)
		}
		return out
	}
	sv, dv := verbs(src), verbs(dst)
	var wantS, wantD []string
	if o.Parallel > 1 {
		wantS = append(wantS, "MODE")
		wantD = append(wantD, "MODE")
	}
	wantS = append(wantS, "SIZE")
	if o.Parallel > 1 {
		wantS = append(wantS, "OPTS RETR")
	}
	wantS = append(wantS, "PORT")
	wantD = append(wantD, "PASV", "ALLO")
	if o.Length > 0 {
		wantS = append(wantS, "ERET")
		wantD = append(wantD, "ESTO")
	} else {
		wantS = append(wantS, "RETR")
		wantD = append(wantD, "STOR")
	}
	if !slices.Equal(sv, wantS) || !slices.Equal(dv, wantD) {
		t.Errorf("commands:\nsource      %q, want %q\ndestination %q, want %q", src, wantS, dst, wantD)
	}
}

// TestThirdPartyRefused: a missing source is the source's *ReplyError;
// the destination, left waiting for a connection, is aborted and closed,
// and the source Conn stays usable. Nothing hangs.
func TestThirdPartyRefused(t *testing.T) {
	for _, par := range []int{1, 4} {
		src, dst := startFerry(t).peer(), startFerry(t).peer()
		ctx := testCtx(t)
		sc, dc := login(t, src.addr, nil), login(t, dst.addr, nil)
		_, err := client.ThirdParty(ctx, sc, "/missing", dc, "/x", &client.ThirdPartyOptions{Parallel: par})
		var re *client.ReplyError
		if !errors.As(err, &re) || re.Reply.Code/100 != 5 {
			t.Fatalf("p%d: err = %v, want a 5xx reply", par, err)
		}
		if _, err := sc.Size(ctx, "/missing"); errors.Is(err, client.ErrClosed) {
			t.Errorf("p%d: source Conn closed after its refusal", par)
		}
		if _, err := dc.Size(ctx, "/x"); !errors.Is(err, client.ErrClosed) {
			t.Errorf("p%d: destination Conn after the abort: %v, want ErrClosed", par, err)
		}
	}
}
