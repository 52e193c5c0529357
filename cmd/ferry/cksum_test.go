package main

import (
	"crypto/md5"
	"crypto/sha256"
	"fmt"
	"hash/adler32"
	"path/filepath"
	"strings"
	"testing"
)

func TestCksum(t *testing.T) {
	s := startGCT(t)
	data := randomData(t, 50_000)
	local := filepath.Join(s.dir, "f")
	writeServed(t, local, data)
	url := s.url + "/f"

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, fmt.Sprintf("%x", md5.Sum(data))},
		{[]string{"-a", "sha256"}, fmt.Sprintf("%x", sha256.Sum256(data))},
		{[]string{"-a", "ADLER32"}, fmt.Sprintf("%08x", adler32.Checksum(data))},
		{[]string{"-off", "100", "-len", "1000"}, fmt.Sprintf("%x", md5.Sum(data[100:1100]))},
		{[]string{"-off", "49000"}, fmt.Sprintf("%x", md5.Sum(data[49000:]))},
		{[]string{"-len", "0"}, fmt.Sprintf("%x", md5.Sum(nil))},
	} {
		for _, target := range []string{url, local} {
			r := ok(t, append(append([]string{"cksum"}, tc.args...), target)...)
			if want := tc.want + "  " + target + "\n"; r.stdout != want {
				t.Errorf("cksum %v %s = %q, want %q", tc.args, target, r.stdout, want)
			}
		}
	}
	if r := ferry(t, nil, "cksum", "-a", "NOPE", url); r.code != 1 || !strings.HasPrefix(r.stderr, "ferry cksum: "+url+": 500 ") {
		t.Errorf("unknown algorithm: exit %d, %q", r.code, r.stderr)
	}
	if r := ferry(t, nil, "cksum", s.url+"/missing"); r.code != 1 {
		t.Errorf("missing file: exit %d", r.code)
	}
	if r := ferry(t, nil, "cksum"); r.code != 2 {
		t.Errorf("no argument: exit %d", r.code)
	}
}
