package dpm

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/memory"
	"github.com/ferrygrid/ferry/dsi/posix"
)

// tree lists every entry below dir in st with its content ("/" suffix
// for directories), sorted.
func tree(t *testing.T, st dsi.Storage, dir string) []string {
	t.Helper()
	var out []string
	list, err := st.ReadDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		p := path.Join(dir, e.Name)
		if e.IsDir() {
			out = append(out, p+"/")
			out = append(out, tree(t, st, p)...)
		} else {
			out = append(out, p+"="+string(get(t, st, p)))
		}
	}
	slices.Sort(out)
	return out
}

func TestTarRoundTrip(t *testing.T) {
	src := memory.New()
	ctx := context.Background()
	for _, d := range []string{"/d", "/d/sub", "/d/sub/deeper", "/d/empty"} {
		if err := src.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put(t, src, "/d/a.txt", []byte("alpha"))
	put(t, src, "/d/sub/b.bin", data(300_000, 1))
	put(t, src, "/d/sub/deeper/c", nil)
	for i := range 50 {
		put(t, src, fmt.Sprintf("/d/sub/f%02d", i), []byte(strings.Repeat("x", i)))
	}
	want := tree(t, src, "/d")
	for _, spec := range []string{`tar=""`, `tar,gzip=""`, `tar,zstd="|5"`, `tar,zstd,cksum=""`} {
		dst := memory.New()
		roundTrip(t, src, "/d", dst, "/out", spec)
		got := tree(t, dst, "/out")
		for i := range got {
			got[i] = strings.Replace(got[i], "/out", "/d", 1)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the tree came back different:\n%v\nwant\n%v", spec, got, want)
		}
	}
}

// entry is one member of a crafted archive.
type entry struct {
	name     string
	typ      byte
	body     string
	size     int64 // when not len(body)
	linkname string
}

func mkTar(t testing.TB, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		size := int64(len(e.body))
		if e.size != 0 {
			size = e.size
		}
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Size: size, Mode: 0o644, Linkname: e.linkname, Format: tar.FormatPAX}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg && e.size == 0 {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Flush(); err != nil && !strings.Contains(err.Error(), "missed writing") {
		t.Fatal(err)
	}
	if slices.ContainsFunc(entries, func(e entry) bool { return e.size != 0 }) {
		// A header claiming more than follows: the archive just ends.
		return b.Bytes()
	}
	tw.Close()
	return b.Bytes()
}

func TestTarMalicious(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []entry
		limits  Limits
		want    error
	}{
		{"dotdot", []entry{{name: "../evil", body: "x"}}, Limits{}, ErrUnsafe},
		{"dotdot inside", []entry{{name: "a/../../evil", body: "x"}}, Limits{}, ErrUnsafe},
		{"dotdot dir", []entry{{name: "../up/", typ: tar.TypeDir}}, Limits{}, ErrUnsafe},
		{"absolute", []entry{{name: "/etc/evil", body: "x"}}, Limits{}, ErrUnsafe},
		{"backslash", []entry{{name: `..\evil`, body: "x"}}, Limits{}, ErrUnsafe},
		{"symlink", []entry{{name: "l", typ: tar.TypeSymlink, linkname: "/etc"}, {name: "l/passwd", body: "x"}}, Limits{}, ErrUnsafe},
		{"hard link", []entry{{name: "h", typ: tar.TypeLink, linkname: "/etc/passwd"}}, Limits{}, ErrUnsafe},
		{"char device", []entry{{name: "null", typ: tar.TypeChar}}, Limits{}, ErrUnsafe},
		{"block device", []entry{{name: "sda", typ: tar.TypeBlock}}, Limits{}, ErrUnsafe},
		{"fifo", []entry{{name: "p", typ: tar.TypeFifo}}, Limits{}, ErrUnsafe},
		{"long name", []entry{{name: strings.Repeat("n/", 3000) + "f", body: "x"}}, Limits{}, ErrUnsafe},
		{"huge size", []entry{{name: "big", size: 1 << 40}}, Limits{MaxBytes: 1 << 30}, ErrLimit},
		{"too many", []entry{{name: "a", body: "1"}, {name: "b", body: "2"}, {name: "c", body: "3"}}, Limits{MaxEntries: 2}, ErrLimit},
		{"truncated", []entry{{name: "cut", size: 1000}}, Limits{}, ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := memory.New()
			ctx := context.Background()
			st.Mkdir(ctx, "/outside", 0o755)
			put(t, st, "/outside/keep", []byte("keep"))
			before := tree(t, st, "/outside")
			err := chain(t, `tar="" /x`, true).Store(ctx, Env{Storage: st, Path: "/target", Limits: c.limits}, bytes.NewReader(mkTar(t, c.entries)))
			if !errors.Is(err, c.want) {
				t.Errorf("ESTO tar: %v; want %v", err, c.want)
			}
			if after := tree(t, st, "/outside"); !slices.Equal(after, before) {
				t.Errorf("the unpack wrote outside its target: %v", after)
			}
			list, _ := st.ReadDir(ctx, "/")
			for _, e := range list {
				if e.Name != "outside" && e.Name != "target" {
					t.Errorf("the unpack made /%s", e.Name)
				}
			}
		})
	}
}

// TestTarSymlinkEscape: on POSIX storage, a link already in the target
// that points outside it is not followed by an unpack.
func TestTarSymlinkEscape(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "target"), 0o755)
	os.MkdirAll(filepath.Join(root, "secret"), 0o755)
	if err := os.Symlink("../secret", filepath.Join(root, "target", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret/file", filepath.Join(root, "target", "flink")); err != nil {
		t.Fatal(err)
	}
	st, err := posix.New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"link/evil", "flink"} {
		err := chain(t, `tar="" /x`, true).Store(context.Background(), Env{Storage: st, Path: "/target"},
			bytes.NewReader(mkTar(t, []entry{{name: name, body: "pwned"}})))
		if err == nil {
			t.Errorf("unpacking %q through a link out of the target succeeded", name)
		}
	}
	if list, _ := os.ReadDir(filepath.Join(root, "secret")); len(list) != 0 {
		t.Errorf("the unpack wrote into the link's target: %v", list)
	}
}

// FuzzTarUnpack: whatever the stream, an unpack into /target writes
// nothing elsewhere and never panics.
func FuzzTarUnpack(f *testing.F) {
	f.Add(mkTar(f, []entry{{name: "a", body: "x"}, {name: "d/", typ: tar.TypeDir}, {name: "d/b", body: "yy"}}))
	f.Add(mkTar(f, []entry{{name: "../a", body: "x"}}))
	f.Add(mkTar(f, []entry{{name: "l", typ: tar.TypeSymlink, linkname: "/"}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st := memory.New()
		ctx := context.Background()
		st.Mkdir(ctx, "/outside", 0o755)
		err := chain(t, `tar="" /x`, true).Store(ctx, Env{Storage: st, Path: "/target", Limits: Limits{MaxBytes: 1 << 20, MaxEntries: 100}}, bytes.NewReader(b))
		_ = err
		list, _ := st.ReadDir(ctx, "/")
		for _, e := range list {
			if e.Name != "outside" && e.Name != "target" {
				t.Fatalf("the unpack made /%s", e.Name)
			}
		}
		if l, _ := st.ReadDir(ctx, "/outside"); len(l) != 0 {
			t.Fatalf("the unpack wrote into /outside: %v", l)
		}
	})
}

// TestTarCutBetweenEntries: a stream that stops between two entries, with
// no end-of-archive block, is refused (archive/tar reads it as a clean
// end); one end block is enough, and the two a tar writer puts are fine.
func TestTarCutBetweenEntries(t *testing.T) {
	whole := mkTar(t, []entry{{name: "a", body: strings.Repeat("A", 700)}, {name: "b", body: "bee"}})
	// The end of entry a: its header, a PAX header, its data padded to
	// blocks: find it by writing a alone without closing.
	var one bytes.Buffer
	tw := tar.NewWriter(&one)
	if err := tw.WriteHeader(&tar.Header{Name: "a", Typeflag: tar.TypeReg, Size: 700, Mode: 0o644, Format: tar.FormatPAX}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(strings.Repeat("A", 700)))
	tw.Flush()
	cut := one.Len()
	if !bytes.Equal(whole[:cut], one.Bytes()) {
		t.Fatal("the archive does not start with entry a as written alone")
	}
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"whole", whole, nil},
		{"end blocks and padding stripped", bytes.TrimRight(whole, "\x00"), ErrCorrupt},
		{"cut after a", whole[:cut], ErrCorrupt},
		{"cut after a, one end block", append(append([]byte{}, whole[:cut]...), make([]byte, tarBlock)...), nil},
		{"empty stream", nil, ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := memory.New()
			err := chain(t, `tar="" /x`, true).Store(context.Background(), Env{Storage: st, Path: "/target"}, bytes.NewReader(c.data))
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("ESTO tar: %v; want %v", err, c.want)
			}
		})
	}
}
