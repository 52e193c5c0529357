package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/client"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"65536", 65536, true},
		{"512K", 512 << 10, true},
		{"512k", 512 << 10, true},
		{"2M", 2 << 20, true},
		{"4MB", 4 << 20, true},
		{"4MiB", 4 << 20, true},
		{"1G", 1 << 30, true},
		{" 8K ", 8 << 10, true},
		{"", 0, false},
		{"K", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5M", 0, false},
		{"12X", 0, false},
		{"3T", 0, false},
		{"4G", 0, false}, // beyond what a socket buffer or block can be
		{"99999999999999999999", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestProgressPrinter(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressPrinter(&buf)
	now := p.start
	p.now = func() time.Time { return now }
	now = now.Add(time.Second)
	p.update(client.Progress{Streams: []int64{1 << 20, 3 << 20}, Bytes: 4 << 20})
	now = now.Add(time.Second)
	p.update(client.Progress{Streams: []int64{2 << 20, 4 << 20}, Bytes: 6 << 20})
	p.done()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{
		"4194304 bytes         4.00 MB/sec avg         4.00 MB/sec inst",
		"stream  0:       1048576 bytes         1.00 MB/sec",
		"stream  1:       3145728 bytes         3.00 MB/sec",
		"6291456 bytes         3.00 MB/sec avg         2.00 MB/sec inst",
		"stream  0:       2097152 bytes         1.00 MB/sec",
		"stream  1:       4194304 bytes         1.00 MB/sec",
	} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %d: %q, want …%q", i, lines[i], want)
		}
	}
	// A retry starts the per-stream counts again.
	buf.Reset()
	now = now.Add(time.Second)
	p.update(client.Progress{Streams: []int64{1 << 20}, Bytes: 7 << 20, Attempt: 1})
	if !strings.Contains(buf.String(), "(attempt 2)") || !strings.Contains(buf.String(), "1048576 bytes         1.00 MB/sec") {
		t.Errorf("after a retry: %q", buf.String())
	}
}
