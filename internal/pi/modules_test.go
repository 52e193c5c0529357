package pi_test

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// retrCmd runs cmd (a RETR or ERET) over a fresh passive connection.
func (c *ctl) retrCmd(cmd string) ([]byte, wire.Reply) {
	c.t.Helper()
	d := c.dataConn()
	c.send(cmd)
	r := c.read()
	if r.Class() != 1 {
		return nil, r
	}
	d.SetReadDeadline(time.Now().Add(30 * time.Second))
	data, err := io.ReadAll(d)
	if err != nil {
		c.t.Fatalf("%s: read data: %v", cmd, err)
	}
	return data, c.read()
}

func moduleServer(t *testing.T, allowed ...string) *ctl {
	cfg := config(seed(t))
	cfg.AllowedModules = allowed
	c := dial(t, serve(t, cfg))
	c.login()
	return c
}

// TestModuleRoundTrip: ERET with a chain, then ESTO of what it sent
// with the same chain, gives back the same bytes; in stream mode and in
// MODE E.
func TestModuleRoundTrip(t *testing.T) {
	c := moduleServer(t, "gzip", "zstd", "tar", "cksum")
	big := bytes.Repeat([]byte("ferry moves bytes; "), 50_000)
	if r := c.stor("STOR", "/big", big); r.Code != 226 {
		t.Fatalf("STOR: %v", r)
	}
	for _, spec := range []string{`gzip=""`, `zstd="5"`, `gzip,cksum=""`} {
		wireBytes, r := c.retrCmd("ERET " + spec + " /big")
		if r.Code != 226 {
			t.Fatalf("ERET %s: %v", spec, r)
		}
		if len(wireBytes) >= len(big) {
			t.Errorf("ERET %s sent %d bytes for %d", spec, len(wireBytes), len(big))
		}
		if r := c.stor("ESTO", spec+" /back", wireBytes); r.Code != 226 {
			t.Fatalf("ESTO %s: %v", spec, r)
		}
		if got, _ := c.retr("/back"); !bytes.Equal(got, big) {
			t.Errorf("%s: the round trip changed the file (%d bytes back)", spec, len(got))
		}
	}
	// A directory as one tar, unpacked elsewhere.
	tarBytes, r := c.retrCmd(`ERET tar,zstd="" /dir`)
	if r.Code != 226 {
		t.Fatalf("ERET tar: %v", r)
	}
	if r := c.stor("ESTO", `tar,zstd="" /copy`, tarBytes); r.Code != 226 {
		t.Fatalf("ESTO tar: %v", r)
	}
	if got, _ := c.retr("/copy/b.txt"); string(got) != "bee" {
		t.Errorf("/copy/b.txt = %q", got)
	}
	// MODE E, several streams each way.
	c.expect("MODE E", 200)
	wireBytes, r := c.modeERetrieve(`ERET zstd="" /big`, 4)
	if r.Code != 226 {
		t.Fatalf("MODE E ERET: %v", r)
	}
	if _, rest := c.modeEStore(`ESTO zstd="" /back-e`, wireBytes, 3, nil); rest[len(rest)-1].Code != 226 {
		t.Fatalf("MODE E ESTO: %v", rest[len(rest)-1])
	}
	c.expect("MODE S", 200)
	if got, _ := c.retr("/back-e"); !bytes.Equal(got, big) {
		t.Errorf("MODE E: the round trip changed the file (%d bytes back)", len(got))
	}
}

// TestModuleRefused: modules outside the allow-list, unknown ones and bad
// arguments are refused with replies naming them.
func TestModuleRefused(t *testing.T) {
	c := moduleServer(t, "gzip")
	for _, x := range []struct {
		cmd  string
		code int
		want string
	}{
		{`ERET zstd="" /a.txt`, 504, "zstd"},
		{`ERET gzip,tar="" /dir`, 504, "tar"},
		{`ERET rot13="" /a.txt`, 504, "rot13"},
		{`ERET gzip="1 /a.txt`, 501, "Syntax"},
		{`ERET gzip="99" /a.txt`, 553, "level"},
		{`ERET gzip="" /nope`, 550, "nope"},
	} {
		r := c.do(x.cmd)
		if r.Code != x.code || !strings.Contains(r.Text(), x.want) {
			t.Errorf("%s: %d %q; want %d naming %s", x.cmd, r.Code, r.Text(), x.code, x.want)
		}
	}
	for _, x := range []struct {
		cmd  string
		want string
	}{
		{`ESTO tar="" /x`, "tar"},
		{`ESTO zstd="" /x`, "zstd"},
	} {
		if r := c.do(x.cmd); r.Code != 504 || !strings.Contains(r.Text(), x.want) {
			t.Errorf("%s: %d %q; want 504 naming %s", x.cmd, r.Code, r.Text(), x.want)
		}
	}
	none := moduleServer(t)
	if r := none.do(`ERET gzip="" /a.txt`); r.Code != 504 || !strings.Contains(r.Text(), "gzip") {
		t.Errorf("a server with no modules allowed: %d %q", r.Code, r.Text())
	}
}

// TestModuleTarRefusesEscape: ESTO tar of an archive with a ".." entry
// is refused and writes nothing outside its target.
func TestModuleTarRefusesEscape(t *testing.T) {
	c := moduleServer(t, "tar")
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, name := range []string{"ok.txt", "../escaped.txt"} {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: 2, Mode: 0o644})
		tw.Write([]byte("hi"))
	}
	tw.Close()
	r := c.stor("ESTO", `tar="" /dir/t`, b.Bytes())
	if r.Code != 553 || !strings.Contains(r.Text(), "escaped") {
		t.Errorf("ESTO tar with ../: %d %q; want 553 naming the entry", r.Code, r.Text())
	}
	c.expect("SIZE /dir/escaped.txt", 550)
	c.expect("SIZE /dir/t/ok.txt", 213)
}
