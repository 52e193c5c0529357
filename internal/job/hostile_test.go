package job

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/testutil/scripted"
	"github.com/ferrygrid/ferry/internal/wire"
)

// hostileServer is a scripted FTP server that answers MLSD with the
// listings it is given (by path; others are empty) and MLST with a
// directory for every path; a key "!CWD p" makes CWD p fail. It stands in for a hostile server, which
// neither ferry serve nor GCT can be made into.
func hostileServer(t *testing.T, listings map[string][]string) string {
	t.Helper()
	return scripted.Serve(t, func(c net.Conn) { serveHostile(c, listings) })
}

func serveHostile(c net.Conn, listings map[string][]string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(c)
	reply := func(s string) { fmt.Fprintf(c, "%s\r\n", s) }
	reply("220 hostile")
	var data net.Listener
	defer func() {
		if data != nil {
			data.Close()
		}
	}()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
		switch strings.ToUpper(verb) {
		case "USER":
			reply("331 password")
		case "PASS":
			reply("230 in")
		case "FEAT":
			reply("211-Features:\r\n MLST type*;size*;modify*;\r\n211 End")
		case "EPSV":
			if data != nil {
				data.Close()
			}
			if data, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				reply("425 no")
				continue
			}
			reply(fmt.Sprintf("229 Entering Extended Passive Mode (|||%d|)", data.Addr().(*net.TCPAddr).Port))
		case "MLST":
			reply("250-status\r\n type=dir;modify=20240101000000; " + arg + "\r\n250 End")
		case "MLSD":
			if data == nil {
				reply("425 no EPSV")
				continue
			}
			dc, err := data.Accept()
			if err != nil {
				reply("425 no data connection")
				continue
			}
			reply("150 listing")
			for _, e := range listings[arg] {
				fmt.Fprintf(dc, "%s\r\n", e)
			}
			dc.Close()
			data.Close()
			data = nil
			reply("226 done")
		case "QUIT":
			reply("221 bye")
			return
		case "PWD":
			reply(`257 "/home" is the current directory`)
		case "CWD":
			if _, fail := listings["!CWD "+arg]; fail {
				reply("550 no")
			} else {
				reply("250 ok")
			}
		case "SITE":
			switch w, _, _ := strings.Cut(arg, " "); strings.ToUpper(w) {
			case "SYMLINKFROM":
				reply("350 ok")
			case "SYMLINKTO":
				reply("250 ok")
			default:
				reply("200 ok")
			}
		case "TYPE", "OPTS", "NOOP":
			reply("200 ok")
		default:
			reply("502 not here")
		}
	}
}

func hostileRemote(addr string) Remote {
	return Remote{Conn: func(ctx context.Context) (*client.Conn, error) {
		c, err := client.Dial(ctx, addr, &client.Config{})
		if err != nil {
			return nil, err
		}
		if err := c.Login(ctx, "anonymous", "x"); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}}
}

// TestHostileListingStaysInDestination serves MLSD listings whose names
// ("x/..", "x/.", "../evil") would, joined onto the local destination,
// leave it: a recursive copy with -delete must plan nothing outside the
// destination, and must say why the directory was not copied.
func TestHostileListingStaysInDestination(t *testing.T) {
	hostile := []string{
		"type=cdir;modify=20240101000000; /src",
		"type=file;size=1;modify=20240101000000; good",
		"type=dir;modify=20240101000000; x/..",
		"type=dir;modify=20240101000000; x/.",
		"type=dir;modify=20240101000000; x/.",
		"type=file;size=1;modify=20240101000000; ../evil",
	}
	for _, tc := range []struct {
		name     string
		listings map[string][]string
	}{
		{"top", map[string][]string{"/src": hostile}},
		{"nested", map[string][]string{
			"/src":     {"type=dir;modify=20240101000000; sub", "type=file;size=1; ok"},
			"/src/sub": hostile,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := hostileServer(t, tc.listings)
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			sibling := filepath.Join(parent, "sibling")
			if err := os.WriteFile(sibling, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			pl := &Planner{Src: hostileRemote(addr), Dst: Local{}, SrcEnd: "ftp://" + addr, DstEnd: "",
				Options: Options{Recursive: true, Delete: true, Sync: true}}
			plan := &Plan{}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if err := pl.Add(ctx, plan, "/src/", dst+"/"); err != nil {
				t.Fatal(err)
			}
			in := func(p string) bool { return p == dst || strings.HasPrefix(p, dst+string(filepath.Separator)) }
			for _, d := range plan.Dirs {
				if !in(d.Dst.Path) {
					t.Errorf("plans the directory %s outside %s", d.Dst.Path, dst)
				}
			}
			for _, p := range plan.Pairs {
				if !in(p.Dst.Path) {
					t.Errorf("plans the copy of %s to %s outside %s", p.Src.Path, p.Dst.Path, dst)
				}
			}
			for _, r := range plan.Deletes {
				if !in(r.Loc.Path) {
					t.Errorf("plans the removal of %s outside %s", r.Loc.Path, dst)
				}
			}
			if len(plan.Dirs)+len(plan.Pairs) > 10 {
				t.Errorf("%d directories and %d files planned from a listing of five names", len(plan.Dirs), len(plan.Pairs))
			}
			var refused bool
			for _, f := range plan.Failed {
				refused = refused || errors.Is(f.Err, wire.ErrUnsafeName)
			}
			if !refused {
				t.Errorf("no failure names the unsafe listing; failed: %v", plan.Failed)
			}
		})
	}
}

// TestListFileEcho checks that listing a file, which some servers answer
// with the file's path as its name, still gives the file's entry.
func TestListFileEcho(t *testing.T) {
	addr := hostileServer(t, map[string][]string{
		"/d/f":  {"type=file;size=3; /d/f"},
		"/d/g":  {"type=file;size=3; g/.."},
		"/d/h":  {"type=dir; /d/h"},
		"/d/ab": {"type=file;size=3; a/b", "type=file;size=3; c"},
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := hostileRemote(addr).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	es, err := c.List(ctx, "/d/f")
	if err != nil || len(es) != 1 || es[0].Name != "f" {
		t.Errorf("List of a file: %v, %v; want the entry f", es, err)
	}
	for _, p := range []string{"/d/g", "/d/h", "/d/ab"} {
		if es, err := c.List(ctx, p); !errors.Is(err, wire.ErrUnsafeName) {
			t.Errorf("List %s = %v, %v; want ErrUnsafeName", p, es, err)
		}
	}
}

// lyingFS is a source that lists the names it is given in every
// directory, bypassing the listing checks of client.List and
// Remote.ReadDir: the planner's own checks must hold.
type lyingFS struct {
	remoteLike
	names []string
}

func (f lyingFS) Stat(ctx context.Context, p string) (Info, error) {
	return Info{Name: filepath.Base(p), Type: TypeDir}, nil
}

func (f lyingFS) ReadDir(ctx context.Context, p string) ([]Info, error) {
	var out []Info
	for _, n := range f.names {
		out = append(out, Info{Name: n, Type: TypeDir})
	}
	return out, nil
}

func TestPlannerRefusesEscapingNames(t *testing.T) {
	for _, names := range [][]string{
		{".."},
		{"x/.."},
		{"a/../../b"},
		{"/etc"},
		{"."},
		{"d", "d"}, // listed twice: the walk would double at every level
		{""},
	} {
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		pl := &Planner{Src: lyingFS{names: names}, Dst: Local{}, Options: Options{Recursive: true, Delete: true, Sync: true}}
		plan := &Plan{}
		if err := pl.Add(t.Context(), plan, "/src/", dst+"/"); err != nil {
			t.Fatal(err)
		}
		// A lying source with one good name ("d" twice) nests maxDepth
		// levels deep; with the duplicate refused that is one line.
		if len(plan.Dirs) > maxDepth+2 {
			t.Errorf("%q: %d directories planned", names, len(plan.Dirs))
		}
		for _, d := range plan.Dirs {
			if d.Dst.Path != dst && !strings.HasPrefix(d.Dst.Path, dst+"/") {
				t.Errorf("%q: plans the directory %s outside %s", names, d.Dst.Path, dst)
			}
		}
		for _, r := range plan.Deletes {
			t.Errorf("%q: plans the removal of %s", names, r.Loc.Path)
		}
		if len(plan.Failed) == 0 {
			t.Errorf("%q: no failure", names)
		}
	}
}

// TestSymlinkLostDirectory checks that when Symlink cannot change back to
// the working directory the connection is closed: relative paths used on
// it later would resolve in the wrong directory.
func TestSymlinkLostDirectory(t *testing.T) {
	addr := hostileServer(t, map[string][]string{"!CWD /home": nil})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var conns []*client.Conn
	r := hostileRemote(addr)
	dial := r.Conn
	r.Conn = func(ctx context.Context) (*client.Conn, error) {
		c, err := dial(ctx)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	if err := r.Symlink(ctx, "target", "/data/link"); err != nil {
		t.Fatal(err)
	}
	if len(conns) != 1 {
		t.Fatalf("%d connections", len(conns))
	}
	if _, err := conns[0].Do(ctx, "NOOP"); !errors.Is(err, client.ErrClosed) {
		t.Errorf("after a failed CWD back: NOOP = %v, want ErrClosed", err)
	}
}
