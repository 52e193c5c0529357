package main

import (
	"bytes"
	"hash/adler32"
	"path/filepath"
	"testing"
)

// forgeAdler32 returns a copy of orig that starts with payload and has
// orig's size and ADLER32: the last 4096 bytes are chosen to fix the
// two 16-bit sums (ADLER32 is no integrity check against an adversary).
func forgeAdler32(orig, payload []byte) []byte {
	const mod = 65521
	const m = 4096
	n := len(orig)
	out := bytes.Clone(orig)
	copy(out, payload)
	clear(out[n-m:])
	want, have := adler32.Checksum(orig), adler32.Checksum(out)
	dA := (int64(want&0xffff) - int64(have&0xffff) + 2*mod) % mod
	dB := (int64(want>>16) - int64(have>>16) + 2*mod) % mod
	// Tail byte at index n-w has weight w in the B sum (w = 1..m).
	t := make([]int64, m+1) // by weight
	s := dA + mod           // units in the tail: ≡ dA
	var w0 int64
	for w := int64(1); s > 0; w++ {
		u := min(s, 255)
		t[w], s, w0 = u, s-u, w0+u*w
	}
	// B = n + sum of b*(n-i): only the weights of the tail bytes change.
	// Move units up in weight until the weighted sum is ≡ dB.
	d := ((dB-w0)%mod + mod) % mod
	for lo := int64(1); d > 0; {
		for t[lo] == 0 {
			lo++
		}
		step := min(d, m-lo)
		for t[lo+step] >= 255 {
			step--
		}
		t[lo]--
		t[lo+step]++
		d -= step
	}
	for w := int64(1); w <= m; w++ {
		out[n-int(w)] = byte(t[w])
	}
	return out
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
