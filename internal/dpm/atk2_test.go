package dpm

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/dsi/null"
)

// Reproductions from the review of 2026-11-28 (docs/review/2026-11-28).

type countW struct{ n, stop int64 }

var errStop = errors.New("stop")

func (c *countW) Write(b []byte) (int, error) {
	c.n += int64(len(b))
	if c.n > c.stop {
		return 0, errStop
	}
	return len(b), nil
}

// #3: cat refuses repeated names and too many names; ERET output is
// bounded by MaxBytes.
func TestAtk2CatRepeatAmplifies(t *testing.T) {
	st := null.New()
	names := strings.Repeat("1T,", 4000)
	spec := `cat="` + names[:len(names)-1] + `" /`
	w := &countW{stop: 64 << 20}
	err := chain(t, spec, false).Retrieve(t.Context(), Env{Storage: st, Path: "/"}, w)
	if !errors.Is(err, ErrSyntax) || w.n != 0 {
		t.Errorf("4000 names: produced %d bytes (%v); want ErrSyntax and nothing", w.n, err)
	}
	err = chain(t, `cat="1T,1T" /`, false).Retrieve(t.Context(), Env{Storage: st, Path: "/"}, w)
	if !errors.Is(err, ErrSyntax) {
		t.Errorf("a repeated name: %v; want ErrSyntax", err)
	}
	w = &countW{stop: 64 << 20}
	err = chain(t, `cat="1T" /`, false).Retrieve(t.Context(), Env{Storage: st, Path: "/", Limits: Limits{MaxBytes: 1 << 20}}, w)
	if !errors.Is(err, ErrLimit) || w.n > 1<<20 {
		t.Errorf("1 TiB under a 1 MiB bound: produced %d bytes (%v); want ErrLimit", w.n, err)
	}
}

// #2: no chain length bound; duplicates
func TestAtk2ChainLength(t *testing.T) {
	n := 2000
	spec := strings.TrimSuffix(strings.Repeat("zstd,", n), ",") + `="` + strings.TrimSuffix(strings.Repeat("22|", n), "|") + `" /f`
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(sp, []string{"zstd"}, false); err == nil {
		t.Fatalf("a %d-stage chain accepted", n)
	}
	sp, _ = ParseSpec(`gzip,zstd,cksum,gzip,zstd="" /f`)
	if _, err := Resolve(sp, Names(), true); err == nil {
		t.Errorf("a 5-stage chain accepted")
	}
}

// rleFrame: a zstd frame of n*128 KiB zeros, 4 bytes per 128 KiB.
func rleFrame(n int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38}
	for i := range n {
		h := uint32(128<<10)<<3 | 1<<1
		if i == n-1 {
			h |= 1
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return b
}

// #1: 3 KiB -> 1 TiB through zstd,zstd
func TestAtk2NestedZstdBomb(t *testing.T) {
	sp, _ := ParseSpec(`zstd,zstd="" /x`)
	if _, err := Resolve(sp, Names(), true); err == nil {
		t.Errorf("zstd,zstd accepted")
	}
	// One level of it stops at MaxBytes.
	var outer bytes.Buffer
	zw, _ := zstd.NewWriter(&outer, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	zw.Write(rleFrame(4096)) // 512 MiB
	zw.Close()
	st := null.New()
	err := chain(t, `zstd="" /x`, true).Store(t.Context(), Env{Storage: st, Path: "/bomb", Limits: Limits{MaxBytes: 256 << 20}}, bytes.NewReader(outer.Bytes()))
	if err != nil || st.BytesWritten() != 4096*4+6 {
		t.Errorf("the outer layer: wrote %d (%v)", st.BytesWritten(), err)
	}
	st = null.New()
	err = chain(t, `zstd="" /x`, true).Store(t.Context(), Env{Storage: st, Path: "/bomb", Limits: Limits{MaxBytes: 256 << 20}}, bytes.NewReader(rleFrame(4096)))
	if !errors.Is(err, ErrLimit) || st.BytesWritten() > 256<<20 {
		t.Errorf("payload %d bytes; wrote %d (%v)", outer.Len(), st.BytesWritten(), err)
	}
	if DefaultMaxBytes > 64<<30 {
		t.Errorf("DefaultMaxBytes is %d", DefaultMaxBytes)
	}
}

// #5: PAX GNU sparse 1.0, all hole
func TestAtk2TarSparseBomb(t *testing.T) {
	const real = 256 << 20
	var buf bytes.Buffer
	rec := func(k, v string) string {
		l := len(k) + len(v) + 3
		for len(fmt.Sprintf("%d %s=%s\n", l, k, v)) != l {
			l++
		}
		return fmt.Sprintf("%d %s=%s\n", l, k, v)
	}
	pax := rec("GNU.sparse.major", "1") + rec("GNU.sparse.minor", "0") + rec("GNU.sparse.name", "big") + rec("GNU.sparse.realsize", fmt.Sprint(real))
	pad := func(b []byte) []byte { return append(b, make([]byte, (512-len(b)%512)%512)...) }
	buf.Write(rawHeader("PaxHeaders/big", 'x', int64(len(pax))))
	buf.Write(pad([]byte(pax)))
	buf.Write(rawHeader("GNUSparseFile.0/big", '0', 512))
	buf.Write(pad([]byte("0\n")))
	buf.Write(make([]byte, 1024))
	st := null.New()
	err := chain(t, `tar="" /`, true).Store(t.Context(), Env{Storage: st, Path: "/"}, bytes.NewReader(buf.Bytes()))
	if st.BytesWritten() != 0 || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("sparse entry: wrote %d bytes (%v); want ErrUnsafe", st.BytesWritten(), err)
	}
	buf.Reset()
	buf.Write(rawHeader("old", 'S', 0))
	buf.Write(make([]byte, 1024))
	err = chain(t, `tar="" /`, true).Store(t.Context(), Env{Storage: st, Path: "/"}, bytes.NewReader(buf.Bytes()))
	if err == nil {
		t.Errorf("a type S entry accepted")
	}
}

func rawHeader(name string, typ byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], "00000000000\x00")
	b[156] = typ
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// #7: a refused ESTO deletes the old file
func TestAtk2FailedESTODeletesOldFile(t *testing.T) {
	st := memory.New()
	put(t, st, "/precious", []byte("years of data"))
	err := chain(t, `gzip="" /precious`, true).Store(t.Context(), Env{Storage: st, Path: "/precious"},
		io.MultiReader(bytes.NewReader([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}), strings.NewReader("garbage garbage")))
	if err == nil {
		t.Fatal("corrupt gzip accepted")
	}
	if got := get(t, st, "/precious"); string(got) != "years of data" {
		t.Errorf("a refused ESTO gzip changed /precious to %q", got)
	}
	st.Mkdir(t.Context(), "/d", 0o755)
	put(t, st, "/d/keep", []byte("old content"))
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "keep", Size: 1000, Mode: 0o644})
	tw.Write([]byte("short"))
	if err := chain(t, `tar="" /d`, true).Store(t.Context(), Env{Storage: st, Path: "/d"}, bytes.NewReader(tb.Bytes()[:1024])); err == nil {
		t.Error("a cut tar accepted")
	}
	if got := get(t, st, "/d/keep"); string(got) != "old content" {
		t.Errorf("a refused ESTO tar changed /d/keep to %q", got)
	}
	for _, dir := range []string{"/", "/d"} {
		list, _ := st.ReadDir(t.Context(), dir)
		for _, e := range list {
			if strings.HasPrefix(e.Name, ".") {
				t.Errorf("%s: %s left behind", dir, e.Name)
			}
		}
	}
	// A good ESTO still replaces the file.
	roundTrip(t, st, "/d/keep", st, "/precious", `gzip=""`)
	if got := get(t, st, "/precious"); string(got) != "old content" {
		t.Errorf("ESTO over /precious: %q", got)
	}
}

// #4: cancel mid-decode is ignored, Store returns nil
func TestAtk2CancelMidway(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	st := null.New()
	err := chain(t, `zstd="" /x`, true).Store(ctx, Env{Storage: st, Path: "/bomb"}, bytes.NewReader(rleFrame(8192))) // 1 GiB
	if st.BytesWritten() == 1<<30 || err == nil {
		t.Errorf("the cancel did not stop the decode (wrote %d, err %v)", st.BytesWritten(), err)
	}
	// Cancelled before the end, a store never reports success.
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	if err := chain(t, `gzip="" /x`, true).Store(ctx, Env{Storage: memory.New(), Path: "/x"}, strings.NewReader("")); err == nil {
		t.Error("a cancelled store returned nil")
	}
}

// #6: directories per entry are not counted; #9, #8: names
func TestAtk2TarDeepDirs(t *testing.T) {
	const k = 20
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	deep := strings.Repeat("a/", 2040)
	for i := range k {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("d%d/%s", i, deep), Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	st := memory.New()
	err := chain(t, `tar="" /t`, true).Store(t.Context(), Env{Storage: st, Path: "/t"}, bytes.NewReader(buf.Bytes()))
	if !errors.Is(err, ErrUnsafe) {
		t.Errorf("2041 levels: %v; want ErrUnsafe", err)
	}
	// Directories made count toward MaxEntries.
	buf.Reset()
	tw = tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "a/b/c/d/e/f/g/h/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.Close()
	err = chain(t, `tar="" /u`, true).Store(t.Context(), Env{Storage: st, Path: "/u", Limits: Limits{MaxEntries: 4}}, bytes.NewReader(buf.Bytes()))
	if !errors.Is(err, ErrLimit) {
		t.Errorf("8 directories under MaxEntries 4: %v; want ErrLimit", err)
	}
	for _, n := range []string{"a\r\nb", "x\x1b[2J", "d/.f.ferry-part", ".g.ferry-part/h"} {
		if _, err := tarName(n); !errors.Is(err, ErrUnsafe) {
			t.Errorf("tarName(%q) = %v; want ErrUnsafe", n, err)
		}
	}
}

// Trailing data after a tar's end is bounded.
func TestAtk2TarTrailer(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.Close()
	buf.Write(make([]byte, 4<<20))
	err := chain(t, `tar="" /t`, true).Store(t.Context(), Env{Storage: memory.New(), Path: "/t"}, bytes.NewReader(buf.Bytes()))
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("4 MiB after the end: %v; want ErrCorrupt", err)
	}
}

var _ dsi.Storage = memory.New()
