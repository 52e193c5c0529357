package pi_test

import (
	"archive/tar"
	"bytes"
	"testing"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// Reproductions from the review of 2026-11-28 (docs/review/2026-11-28).

// #8: a tar entry cannot plant another user's upload part file.
func TestAtk2TarPlantsPartFile(t *testing.T) {
	cfg := config(seed(t))
	cfg.AllowedModules = []string{"tar"}
	addr := serve(t, cfg)
	a := dial(t, addr)
	a.loginAs("alice")
	mine := bytes.Repeat([]byte{'A'}, 1000)
	if r := a.partUpload("STOR", "/shared", mine, "", xfer.Range{Start: 0, End: 500}, nil); r.Code != 226 {
		t.Fatalf("alice part 1: %v", r)
	}
	b := dial(t, addr)
	b.login()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: ".shared" + xfer.PartSuffix, Typeflag: tar.TypeReg, Size: 1000, Mode: 0o644})
	tw.Write(bytes.Repeat([]byte{'B'}, 1000))
	tw.Close()
	r := b.stor("ESTO", `tar="" /`, tb.Bytes())
	if r.Code == 226 {
		t.Errorf("ESTO tar planted a part file: %v", r)
	}
}

// #7 end to end: a refused ESTO leaves the old file.
func TestAtk2FailedESTODeletesFile(t *testing.T) {
	c := moduleServer(t, "gzip")
	if r := c.stor("STOR", "/keep", []byte("precious")); r.Code != 226 {
		t.Fatal(r)
	}
	r := c.stor("ESTO", `gzip="" /keep`, []byte("this is not gzip"))
	if r.Code == 226 {
		t.Fatalf("ESTO of non-gzip: %v", r)
	}
	got, rr := c.retr("/keep")
	if rr.Code != 226 || string(got) != "precious" {
		t.Errorf("a refused ESTO (%d) destroyed /keep: %d %q", r.Code, rr.Code, got)
	}
}

// #9: entry names with control characters are refused.
func TestAtk2TarNameForgesListing(t *testing.T) {
	c := moduleServer(t, "tar")
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "real.txt\r\ntype=file;size=4242;modify=20260101000000; FORGED-ENTRY", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
	tw.Write([]byte("x"))
	tw.Close()
	if r := c.stor("ESTO", `tar="" /inj`, tb.Bytes()); r.Code == 226 {
		t.Errorf("a tar entry name with CR/LF was accepted")
	}
}

// #1, #3: the server's ModuleMaxBytes bounds ESTO output and the ERET
// spool, with a 5xx reply.
func TestAtk2ModuleMaxBytes(t *testing.T) {
	cfg := config(seed(t))
	cfg.AllowedModules = []string{"gzip", "cat"}
	cfg.ModuleMaxBytes = 100_000
	c := dial(t, serve(t, cfg))
	c.login()
	big := make([]byte, 300_000)
	if r := c.stor("STOR", "/big", big); r.Code != 226 {
		t.Fatal(r)
	}
	if _, r := c.retrCmd(`ERET cat="" /big`); r.Code < 500 {
		t.Errorf("ERET of 300000 bytes under a 100000 bound: %v", r)
	}
	gz, r := c.retrCmd(`ERET gzip="" /big`)
	if r.Code != 226 {
		t.Fatalf("ERET gzip (small output): %v", r)
	}
	if r := c.stor("ESTO", `gzip="" /bomb`, gz); r.Code < 500 {
		t.Errorf("ESTO inflating to 300000 bytes under a 100000 bound: %v", r)
	}
	if _, r := c.retr("/bomb"); r.Code == 226 {
		t.Errorf("the refused ESTO left /bomb")
	}
}
