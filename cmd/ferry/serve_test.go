package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParsePortRange(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi uint16
		ok     bool
	}{
		{"50000,51000", 50000, 51000, true},
		{" 50000 , 50000 ", 50000, 50000, true},
		{"50000 51000", 50000, 51000, true},
		{"51000,50000", 0, 0, false},
		{"0,10", 0, 0, false},
		{"1,70000", 0, 0, false},
		{"abc", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		lo, hi, err := parsePortRange(tt.in)
		if (err == nil) != tt.ok || lo != tt.lo || hi != tt.hi {
			t.Errorf("parsePortRange(%q) = %d, %d, %v", tt.in, lo, hi, err)
		}
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ferry.conf")
	os.WriteFile(file, []byte("# a comment\nlisten 127.0.0.1:7000\nanonymous true\nmax-sessions = 5\nport-range \"50000,50010\"\n"), 0o644)
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse([]string{"-max-sessions", "9"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, file); err != nil {
		t.Fatal(err)
	}
	if f.listen != "127.0.0.1:7000" || !f.anonymous || f.maxSessions != 9 || f.portRange != "50000,50010" {
		t.Fatalf("config not applied, or overrode the command line: %+v", f)
	}
	os.WriteFile(file, []byte("lisen :1\n"), 0o644)
	if err := applyConfigFile(fs, file); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Fatalf("unknown key: %v", err)
	}
}

// TestConfigFileSeparators: spaces, tabs, '=' and trailing white space
// around keys and values.
func TestConfigFileSeparators(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		listen     string
		anonymous  bool
	}{
		{"space", "listen 127.0.0.1:7001", "127.0.0.1:7001", false},
		{"tab", "listen\t127.0.0.1:7002", "127.0.0.1:7002", false},
		{"spaces", "listen    127.0.0.1:7003", "127.0.0.1:7003", false},
		{"tabs and spaces", "listen \t \t127.0.0.1:7004", "127.0.0.1:7004", false},
		{"trailing space", "listen 127.0.0.1:7005   ", "127.0.0.1:7005", false},
		{"trailing tab", "listen\t127.0.0.1:7006\t", "127.0.0.1:7006", false},
		{"leading white space", " \tlisten 127.0.0.1:7007", "127.0.0.1:7007", false},
		{"crlf", "listen 127.0.0.1:7008\r", "127.0.0.1:7008", false},
		{"equals", "listen = 127.0.0.1:7009", "127.0.0.1:7009", false},
		{"equals and tabs", "listen\t=\t127.0.0.1:7010", "127.0.0.1:7010", false},
		{"equals alone", "listen=127.0.0.1:7011", "127.0.0.1:7011", false},
		{"quoted", "listen\t\"127.0.0.1:7012\"", "127.0.0.1:7012", false},
		{"boolean true", "anonymous true", "", true},
		{"boolean true, trailing tab", "anonymous true\t", "", true},
		{"boolean with tab", "anonymous\tfalse", "", false},
		{"comment", "\t# listen 127.0.0.1:1", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ferry.conf")
			if err := os.WriteFile(file, []byte(tc.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var f serveFlags
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			f.register(fs)
			f.listen, f.anonymous = "", false
			if err := applyConfigFile(fs, file); err != nil {
				t.Fatal(err)
			}
			if f.listen != tc.listen || f.anonymous != tc.anonymous {
				t.Errorf("%q: listen %q, anonymous %v; want %q, %v", tc.line, f.listen, f.anonymous, tc.listen, tc.anonymous)
			}
		})
	}
	// A tab does not make an unknown key known.
	file := filepath.Join(t.TempDir(), "ferry.conf")
	os.WriteFile(file, []byte("lisen\t:1\n"), 0o644)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	new(serveFlags).register(fs)
	if err := applyConfigFile(fs, file); err == nil || !strings.Contains(err.Error(), `unknown key "lisen"`) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestServeInProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, &env{stdin: strings.NewReader(""), stdout: pw, stderr: io.Discard},
			[]string{"serve", "-listen", "127.0.0.1:0", "-storage", "null", "-anonymous"})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "Server listening at 127.0.0.1:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	c, err := net.Dial("tcp", strings.TrimSpace(strings.TrimPrefix(line, "Server listening at ")))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	banner, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(banner, "220 ") {
		t.Fatalf("banner %q", banner)
	}
	c.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeRefusesNoLogins(t *testing.T) {
	code := runMain(context.Background(), &env{stdout: io.Discard, stderr: io.Discard}, []string{"serve", "-listen", "127.0.0.1:0"})
	if code != 2 {
		t.Fatalf("serve without -anonymous or -passwd exited %d, want 2", code)
	}
}

// TestServeRefusesMoversAsUser: -movers with -run-as-mapped-user is
// refused (the movers would not act as the mapped user).
func TestServeRefusesMoversAsUser(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // if it serves after all
	defer cancel()
	code := runMain(ctx, &env{stdout: io.Discard, stderr: &stderr}, []string{"serve", "-listen", "127.0.0.1:0", "-anonymous",
		"-root", t.TempDir(), "-movers", "127.0.0.2:1", "-mover-secret", secret, "-run-as-mapped-user=true"})
	if code != 2 || !strings.Contains(stderr.String(), "-run-as-mapped-user") {
		t.Fatalf("serve -movers -run-as-mapped-user exited %d: %s", code, stderr.String())
	}
}

// TestConfigFileTruncated: a file cut short is refused: a boolean key
// without its value ("anonymous" of "anonymous false"), any key without a
// value, and a last line without its newline (a write under way).
func TestConfigFileTruncated(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"boolean key alone", "anonymous\n", `anonymous needs a value: write "anonymous true" or "anonymous false"`},
		{"boolean key alone, tab", "anonymous-write\t\n", "anonymous-write needs a value"},
		{"string key alone", "gridmap\n", "gridmap needs a value"},
		{"no final newline", "passwd /etc/ferry/passwd\nanonymous false", "does not end with a newline"},
		{"cut in a value", "gridmap /etc/grid-security/grid-m", "does not end with a newline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ferry.conf")
			if err := os.WriteFile(file, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			var f serveFlags
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			f.register(fs)
			err := applyConfigFile(fs, file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%q: %v, want an error with %q", tc.body, err, tc.want)
			}
			if f.anonymous || f.anonWrite {
				t.Errorf("%q turned anonymous access on", tc.body)
			}
		})
	}
}

// TestServeS3NeedsEndpointAndBucket: -storage s3 without an endpoint
// or a bucket is refused with a message naming the flag to set.
func TestServeS3NeedsEndpointAndBucket(t *testing.T) {
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "")
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"-s3-endpoint", "-s3-bucket"}},
		{[]string{"-s3-bucket", "b"}, []string{"-s3-endpoint"}},
		{[]string{"-s3-endpoint", "http://127.0.0.1:1"}, []string{"-s3-bucket"}},
	} {
		var stderr strings.Builder
		args := append([]string{"serve", "-listen", "127.0.0.1:0", "-anonymous", "-storage", "s3"}, c.args...)
		code := runMain(context.Background(), &env{stdout: io.Discard, stderr: &stderr}, args)
		for _, w := range c.want {
			if code != 2 || !strings.Contains(stderr.String(), w) {
				t.Errorf("serve %v exited %d: %s; want 2 naming %s", c.args, code, stderr.String(), w)
			}
		}
	}
}

// TestServeAllowedModules: an unknown module in -allowed-modules is
// refused, naming it.
func TestServeAllowedModules(t *testing.T) {
	var stderr strings.Builder
	code := runMain(context.Background(), &env{stdout: io.Discard, stderr: &stderr},
		[]string{"serve", "-listen", "127.0.0.1:0", "-anonymous", "-root", t.TempDir(), "-allowed-modules", "gzip,rot13"})
	if code != 2 || !strings.Contains(stderr.String(), "rot13") {
		t.Fatalf("serve -allowed-modules gzip,rot13 exited %d: %s", code, stderr.String())
	}
}

// TestServeModuleMaxBytes: -module-max-bytes reaches server.Config, and
// a bound that is not positive is refused.
func TestServeModuleMaxBytes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int64
		bad  bool
	}{
		{nil, 64 << 30, false},
		{[]string{"-module-max-bytes", "1000"}, 1000, false},
		{[]string{"-module-max-bytes", "0"}, 0, true},
	} {
		f := new(serveFlags)
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(append([]string{"-storage", "null", "-anonymous"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.serverConfig(&env{stdout: io.Discard, stderr: io.Discard})
		if c.bad != (err != nil) || !c.bad && cfg.ModuleMaxBytes != c.want {
			t.Errorf("%v: ModuleMaxBytes %d, %v", c.args, cfg.ModuleMaxBytes, err)
		}
	}
}
