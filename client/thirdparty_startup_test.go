package client_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrygrid/ferry/client"
)

// TestThirdPartySetUpPipelined: a third-party copy whose size the caller
// knows does not ask the source for it (SIZE), and the set-up commands
// that do not wait on each other go out together (several in flight on
// each server), between Ferry and GCT each way, in stream mode and in
// MODE E, and in a batch. Every byte arrives.
func TestThirdPartySetUpPipelined(t *testing.T) {
	for _, pr := range tpPairs {
		t.Run(pr.name, func(t *testing.T) {
			src, dst := pr.src(t), pr.dst(t)
			ctx := testCtx(t)
			data := seeded(300_001, 17)
			writeShared(t, filepath.Join(src.dir, "src"), data)
			for _, par := range []int{1, 4} {
				sfl, dfl := &flight{}, &flight{}
				sc := login(t, src.addr, &client.Config{Logger: slog.New(sfl)})
				dc := login(t, dst.addr, &client.Config{Logger: slog.New(dfl)})
				// The level of replies over commands after login (the
				// greeting is a reply without a command).
				sfl.take()
				dfl.take()
				_, sbase := sfl.take()
				_, dbase := dfl.take()
				name := fmt.Sprintf("one-p%d", par)
				n, err := client.ThirdParty(ctx, sc, src.remote("src"), dc, dst.remote(name),
					&client.ThirdPartyOptions{Parallel: par, ModeE: true, Size: int64(len(data)), KnownSize: true})
				if err != nil || n != int64(len(data)) {
					t.Fatalf("p%d: ThirdParty = %d, %v; want %d", par, n, err, len(data))
				}
				if got := readAll(t, filepath.Join(dst.dir, name)); !bytes.Equal(got, data) {
					t.Fatalf("p%d: destination differs (%d bytes, want %d)", par, len(got), len(data))
				}
				scmds, smax := sfl.take()
				dcmds, dmax := dfl.take()
				if k := count(scmds, "SIZE"); k != 0 {
					t.Errorf("p%d: source got SIZE with the size known: %q", par, scmds)
				}
				// MODE E and OPTS RETR on the source, MODE E and PASV
				// (and ALLO and STOR) on the destination.
				if smax-sbase < 2 || dmax-dbase < 2 {
					t.Errorf("p%d: at most %d commands in flight on the source (%q), %d on the destination (%q); want the set-up pipelined",
						par, smax-sbase, scmds, dmax-dbase, dcmds)
				}

				// A batch: its first file sets the channel up.
				want := tpTree(t, src, fmt.Sprintf("b%d-", par), 6, uint64(par)*77)
				files := make([]client.ThirdPartyFile, len(want))
				for i := range want {
					files[i] = client.ThirdPartyFile{Src: src.remote(fmt.Sprintf("b%d-%d", par, i)), Dst: dst.remote(fmt.Sprintf("bd%d-%d", par, i)),
						Size: int64(len(want[i])), KnownSize: true}
				}
				errs := client.ThirdPartyFiles(ctx, sc, dc, files, &client.BatchOptions{Window: 4, Parallel: par})
				for i, err := range errs {
					if err != nil {
						t.Errorf("p%d: batch file %d: %v", par, i, err)
						continue
					}
					if got := readAll(t, filepath.Join(dst.dir, fmt.Sprintf("bd%d-%d", par, i))); !bytes.Equal(got, want[i]) {
						t.Errorf("p%d: batch file %d: %d bytes, want %d", par, i, len(got), len(want[i]))
					}
				}
				if scmds, _ := sfl.take(); count(scmds, "SIZE") != 0 {
					t.Errorf("p%d: batch sent SIZE with the sizes known: %q", par, scmds)
				}
			}
		})
	}
}

// TestThirdPartyStalePlannedSize: a file that grew after it was listed
// still copies whole to a Ferry destination: a planned size skips SIZE
// but is never announced with ALLO, which Ferry enforces as a limit.
func TestThirdPartyStalePlannedSize(t *testing.T) {
	src, dst := ferryPeer(t), ferryPeer(t)
	ctx := testCtx(t)
	want := seeded(300<<10, 77)
	writeShared(t, filepath.Join(src.dir, "grew"), want)
	for _, p := range []int{1, 2} {
		sc, dc := login(t, src.addr, nil), login(t, dst.addr, nil)
		name := fmt.Sprintf("grew-%d", p)
		errs := client.ThirdPartyFiles(ctx, sc, dc, []client.ThirdPartyFile{
			{Src: src.remote("grew"), Dst: dst.remote(name), Size: 100 << 10, KnownSize: true},
		}, &client.BatchOptions{Parallel: p})
		got, err := os.ReadFile(filepath.Join(dst.dir, name))
		if errs[0] != nil || err != nil || !bytes.Equal(got, want) {
			t.Errorf("-p %d: %v; on disk %d bytes (%v), want the grown file's %d", p, errs[0], len(got), err, len(want))
		}
	}
}
