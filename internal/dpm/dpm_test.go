package dpm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		arg    string
		names  []string
		params []string
		path   string
		bad    bool
	}{
		{arg: `gzip="" /a`, names: []string{"gzip"}, params: []string{""}, path: "/a"},
		{arg: `zstd="level=3" /a b`, names: []string{"zstd"}, params: []string{"level=3"}, path: "/a b"},
		{arg: `tar,zstd="|3" dir`, names: []string{"tar", "zstd"}, params: []string{"", "3"}, path: "dir"},
		{arg: `tar,gzip="" d`, names: []string{"tar", "gzip"}, params: []string{"", ""}, path: "d"},
		{arg: `cat="a b,c" /d`, names: []string{"cat"}, params: []string{"a b,c"}, path: "/d"},
		{arg: `gzip /a`, bad: true},
		{arg: `gzip="1 /a`, bad: true},
		{arg: `gzip="1"/a`, bad: true},
		{arg: `gzip="1" `, bad: true},
		{arg: `="1" /a`, bad: true},
		{arg: `a,,b="" /a`, bad: true},
		{arg: `gzip="1|2" /a`, bad: true},
		{arg: `P 0 10 /a`, bad: true},
	} {
		sp, err := ParseSpec(c.arg)
		if c.bad {
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("ParseSpec(%q) = %+v, %v; want ErrSyntax", c.arg, sp, err)
			}
			continue
		}
		if err != nil || !slices.Equal(sp.Names, c.names) || !slices.Equal(sp.Params, c.params) || sp.Path != c.path {
			t.Errorf("ParseSpec(%q) = %+v, %v", c.arg, sp, err)
		}
		if got := FormatSpec(sp.Names, sp.Params, sp.Path); got != c.arg && !strings.Contains(c.arg, ",") {
			t.Errorf("FormatSpec = %q; want %q", got, c.arg)
		}
	}
	// Every strict prefix of a valid argument without its path fails.
	valid := `tar,zstd="|3" /dir`
	for i := range len(valid) - len("/dir") {
		if _, err := ParseSpec(valid[:i]); err == nil {
			t.Errorf("ParseSpec(%q) succeeded", valid[:i])
		}
	}
	if IsSpec("P 0 10 /a") || IsSpec("A 10 /a") || !IsSpec(`gzip="" /a`) {
		t.Error("IsSpec is wrong")
	}
}

func TestResolve(t *testing.T) {
	all := Names()
	for _, c := range []struct {
		spec    string
		allowed []string
		store   bool
		want    error
		name    string
	}{
		{spec: `gzip="" /a`, allowed: all},
		{spec: `tar,zstd="" /a`, allowed: all},
		{spec: `tar,zstd="" /a`, allowed: all, store: true},
		{spec: `gzip="" /a`, allowed: nil, want: ErrNotAllowed, name: "gzip"},
		{spec: `tar,zstd="" /a`, allowed: []string{"tar"}, want: ErrNotAllowed, name: "zstd"},
		{spec: `GZIP="" /a`, allowed: []string{"gzip"}},
		{spec: `rot13="" /a`, allowed: all, want: ErrUnknown, name: "rot13"},
		{spec: `cat="" /a`, allowed: all, store: true, want: ErrDirection, name: "cat"},
		{spec: `gzip,tar="" /a`, allowed: all, want: ErrDirection, name: "tar"},
	} {
		sp, err := ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Resolve(sp, c.allowed, c.store)
		var me *ModuleError
		switch {
		case c.want == nil && err != nil:
			t.Errorf("Resolve(%s, %v): %v", c.spec, c.allowed, err)
		case c.want != nil && (!errors.Is(err, c.want) || !errors.As(err, &me) || me.Name != c.name):
			t.Errorf("Resolve(%s, %v): %v; want %v naming %s", c.spec, c.allowed, err, c.want, c.name)
		}
	}
}

func put(t *testing.T, st dsi.Storage, name string, b []byte) {
	t.Helper()
	w, err := st.Create(t.Context(), name, dsi.CreateOptions{Truncate: true, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, st dsi.Storage, name string) []byte {
	t.Helper()
	r, err := st.Open(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func chain(t *testing.T, spec string, store bool) *Chain {
	t.Helper()
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(sp, Names(), store)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func data(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefgh\n"[r.IntN(9)] // compressible, not trivially
	}
	return b
}

// roundTrip runs ERET spec on path of src and ESTO spec of the result to
// dst at to, and returns the bytes on the wire.
func roundTrip(t *testing.T, src dsi.Storage, path string, dst dsi.Storage, to, names string) []byte {
	t.Helper()
	var wire bytes.Buffer
	if err := chain(t, names+` /x`, false).Retrieve(t.Context(), Env{Storage: src, Path: path}, &wire); err != nil {
		t.Fatalf("ERET %s: %v", names, err)
	}
	if err := chain(t, names+` /x`, true).Store(t.Context(), Env{Storage: dst, Path: to}, bytes.NewReader(wire.Bytes())); err != nil {
		t.Fatalf("ESTO %s: %v", names, err)
	}
	return wire.Bytes()
}

func TestFilterRoundTrips(t *testing.T) {
	for _, spec := range []string{`gzip=""`, `gzip="9"`, `zstd=""`, `zstd="level=7"`, `cksum=""`, `cksum="MD5"`, `gzip,cksum="|ADLER32"`, `zstd,gzip=""`} {
		for _, n := range []int{0, 1, 100_000, 1 << 20} {
			src, dst := memory.New(), memory.New()
			in := data(n, uint64(n))
			put(t, src, "/f", in)
			wire := roundTrip(t, src, "/f", dst, "/g", spec)
			if got := get(t, dst, "/g"); !bytes.Equal(got, in) {
				t.Errorf("%s, %d bytes: the round trip changed the data (%d bytes back)", spec, n, len(got))
			}
			if n > 100_000 && !strings.HasPrefix(spec, `cksum`) && len(wire) >= n {
				t.Errorf("%s: %d bytes compressed to %d", spec, n, len(wire))
			}
		}
	}
}

func TestCorruptRefused(t *testing.T) {
	for _, c := range []struct {
		spec string
		wire []byte
	}{
		{`gzip=""`, []byte("not gzip at all")},
		{`zstd=""`, []byte("not zstd either, no")},
		{`cksum=""`, []byte("short")},
		{`cksum=""`, append([]byte("data"), strings.Repeat("0", 64)...)},
	} {
		st := memory.New()
		err := chain(t, c.spec+` /x`, true).Store(t.Context(), Env{Storage: st, Path: "/f"}, bytes.NewReader(c.wire))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("ESTO %s of %q: %v; want ErrCorrupt", c.spec, c.wire, err)
		}
		if _, serr := st.Stat(t.Context(), "/f"); !errors.Is(serr, dsi.ErrNotExist) {
			t.Errorf("ESTO %s of bad data left /f (%v)", c.spec, serr)
		}
	}
}

// TestDecompressionBomb: output past Limits.MaxBytes is refused.
func TestDecompressionBomb(t *testing.T) {
	src, dst := memory.New(), memory.New()
	put(t, src, "/zeros", make([]byte, 8<<20))
	var wire bytes.Buffer
	if err := chain(t, `zstd="" /x`, false).Retrieve(t.Context(), Env{Storage: src, Path: "/zeros"}, &wire); err != nil {
		t.Fatal(err)
	}
	err := chain(t, `zstd="" /x`, true).Store(t.Context(), Env{Storage: dst, Path: "/z", Limits: Limits{MaxBytes: 1 << 20}}, &wire)
	if !errors.Is(err, ErrLimit) {
		t.Errorf("ESTO of %d bytes that grow to 8 MiB with a 1 MiB limit: %v; want ErrLimit", wire.Len(), err)
	}
}

// TestCat: ERET cat concatenates the named files, or a directory's.
func TestCat(t *testing.T) {
	st := memory.New()
	ctx := context.Background()
	st.Mkdir(ctx, "/d", 0o755)
	put(t, st, "/d/b", []byte("BBB"))
	put(t, st, "/d/a", []byte("AA"))
	put(t, st, "/d/c", []byte("C"))
	for _, c := range []struct{ spec, want string }{
		{`cat=""`, "AABBBC"},
		{`cat="c,a"`, "CAA"},
	} {
		var out bytes.Buffer
		if err := chain(t, c.spec+` /d`, false).Retrieve(ctx, Env{Storage: st, Path: "/d"}, &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != c.want {
			t.Errorf("ERET %s = %q; want %q", c.spec, out.String(), c.want)
		}
	}
}

// FuzzParseSpec: any argument parses or fails with ErrSyntax, and what
// parses formats back to an argument that parses the same.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{`gzip="" /a`, `tar,zstd="|3" d`, `cat="a,b" /x y`, `="" /`, `a="`, `P 0 1 /a`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		sp, err := ParseSpec(arg)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("ParseSpec(%q): %v, not ErrSyntax", arg, err)
			}
			return
		}
		again, err := ParseSpec(FormatSpec(sp.Names, sp.Params, sp.Path))
		if err != nil || !slices.Equal(again.Names, sp.Names) || !slices.Equal(again.Params, sp.Params) || again.Path != sp.Path {
			t.Fatalf("ParseSpec(%q) = %+v; formatted and parsed again: %+v, %v", arg, sp, again, err)
		}
	})
}
