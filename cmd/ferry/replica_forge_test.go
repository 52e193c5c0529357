package main

import (
	"bytes"
	"hash/adler32"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// forgeAdler32 returns a copy of orig (at least 8 KiB) that starts with
// payload and has orig's size and ADLER32: the last 4096 bytes are chosen
// to fix the two 16-bit sums (ADLER32 is no integrity check against an
// adversary).
func forgeAdler32(orig, payload []byte) []byte {
	const mod = 65521
	const m = 4096
	n := len(orig)
	out := bytes.Clone(orig)
	copy(out, payload)
	clear(out[n-m:])
	want, have := adler32.Checksum(orig), adler32.Checksum(out)
	dA := (int64(want&0xffff) - int64(have&0xffff) + mod) % mod
	dB := (int64(want>>16) - int64(have>>16) + mod) % mod
	// The tail byte at index n-w (weight w = 1..m) adds its value to A
	// and w times it to B. Put dA+mod units in the tail, packed at the
	// lowest weights (at most 514 of them), then move single units from
	// the top of that packing to higher weights until the weighted sum
	// is ≡ dB: each move but the last goes to weight m (adding at least
	// 3582, so at most 19 land there), the last to an empty weight.
	t := make([]int64, m+1)
	var ws, top int64
	for w, s := int64(1), dA+mod; s > 0; w++ {
		u := min(s, 255)
		t[w], s, ws, top = u, s-u, ws+u*w, w
	}
	for d := ((dB-ws)%mod + mod) % mod; d > 0; {
		for t[top] == 0 {
			top--
		}
		to := min(top+d, m)
		t[top]--
		t[to]++
		d -= to - top
	}
	for w := int64(1); w <= m; w++ {
		out[n-int(w)] = byte(t[w])
	}
	return out
}

// TestForgeAdler32: the forgery matches for any data (the greedy search
// it replaced could loop for good on some inputs).
func TestForgeAdler32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		orig := make([]byte, 8<<10+rng.IntN(64<<10))
		for j := range orig {
			orig[j] = byte(rng.Uint32())
		}
		forged := forgeAdler32(orig, []byte("#!/bin/sh\necho owned\n"))
		if adler32.Checksum(forged) != adler32.Checksum(orig) || len(forged) != len(orig) || !bytes.HasPrefix(forged, []byte("#!/bin/sh")) {
			t.Fatalf("input %d (%d bytes): forged ADLER32 %08x, want %08x", i, len(orig), adler32.Checksum(forged), adler32.Checksum(orig))
		}
	}
}

// TestLFNForgedAdler32Refused: a malicious replica server serves other
// bytes of the same size and ADLER32 (a 32-bit sum anyone can match);
// with the catalogue's default algorithm (SHA256) ferry cp lfn: refuses
// them (the outside review found them accepted under the old default,
// ADLER32).
func TestLFNForgedAdler32Refused(t *testing.T) {
	catalogueEnv(t)
	data := randomData(t, 1<<20)
	s := startReplicaSrv(t)
	writeFile(t, filepath.Join(s.dir, "f"), data)
	const lfn = "/r9/adler"
	ok(t, "replica", "add", "lfn:"+lfn, s.url+"/f")
	forged := forgeAdler32(data, []byte("#!/bin/sh\necho owned\n"))
	if adler32.Checksum(forged) != adler32.Checksum(data) || bytes.Equal(forged, data) {
		t.Fatal("forgery failed")
	}
	writeFile(t, filepath.Join(s.dir, "f"), forged)
	dst := filepath.Join(t.TempDir(), "f")
	r := ferry(t, nil, "cp", lfn2(lfn), dst)
	if r.code == 0 && bytes.Equal(mustRead(t, dst), forged) {
		t.Errorf("ferry cp accepted a replica's forged bytes as %s (exit 0; they start %q)", lookup(t, lfn).Alg, forged[:10])
	}
}
