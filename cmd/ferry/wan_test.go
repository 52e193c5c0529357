package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/wan"
)

func TestWANFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
		cfg  wan.Config
	}{
		{[]string{"-delay", "25ms", "-loss", "1%", "-rate", "1G", "-seed", "7", "-client", "true"}, true,
			wan.Config{Delay: 25 * time.Millisecond, Loss: 0.01, Rate: 1e9, Seed: 7}},
		{[]string{"-loss", "0.02", "-loss-dir", "both", "-loss-acks", "-rate", "100Mbit", "-check"}, true,
			wan.Config{Loss: 0.02, LossDir: wan.Both, LossACKs: true, Rate: 100e6, Seed: 1}},
		{[]string{"-sysctl", "net.ipv4.tcp_rmem=4096 131072 1048576", "-loss-dir", "to-server", "-client", "x"}, true,
			wan.Config{LossDir: wan.ToServer, Seed: 1, Sysctls: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 1048576"}}},
		{[]string{}, false, wan.Config{}},                                     // neither -client nor -check
		{[]string{"-check", "-client", "true"}, false, wan.Config{}},          // both
		{[]string{"-loss", "2", "-client", "true"}, false, wan.Config{}},      // above 1
		{[]string{"-loss", "150%", "-client", "true"}, false, wan.Config{}},   // above 100 %
		{[]string{"-rate", "fast", "-client", "true"}, false, wan.Config{}},   // not a rate
		{[]string{"-loss-dir", "up", "-client", "true"}, false, wan.Config{}}, // not a direction
		{[]string{"-sysctl", "novalue", "-client", "true"}, false, wan.Config{}},
		{[]string{"-delay", "-1ms", "-client", "true"}, false, wan.Config{}},
		{[]string{"-client", "true", "extra"}, false, wan.Config{}},
	} {
		var stderr bytes.Buffer
		o, err := parseWANFlags(&env{stdout: &bytes.Buffer{}, stderr: &stderr}, tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v, want ok %v (stderr %s)", tc.args, err, tc.ok, stderr.String())
			continue
		}
		if !tc.ok {
			continue
		}
		got := o.cfg
		if got.Delay != tc.cfg.Delay || got.Loss != tc.cfg.Loss || got.LossDir != tc.cfg.LossDir || got.LossACKs != tc.cfg.LossACKs ||
			got.Rate != tc.cfg.Rate || got.Seed != tc.cfg.Seed || len(got.Sysctls) != len(tc.cfg.Sysctls) {
			t.Errorf("%q: config %+v, want %+v", tc.args, got, tc.cfg)
		}
		for k, v := range tc.cfg.Sysctls {
			if got.Sysctls[k] != v {
				t.Errorf("%q: sysctl %s=%q, want %q", tc.args, k, got.Sysctls[k], v)
			}
		}
	}
}

func TestWANHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), &env{stdout: &stdout, stderr: &stderr}, []string{"wan", "-h"})
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	for _, want := range []string{"-delay", "-loss-acks", "-wait-port", "-check", "FERRY_WAN_SERVER_ADDR", "10.77.0.2"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestWANRun runs iperf3's server and client across a link and checks
// that they talk, that the report is printed, and that a failing client
// makes the command fail.
func TestWANRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	// iperf3 is installed by make deps, as are ip and tc.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	server := "exec iperf3 -s -1 -p 7777"
	client := `iperf3 -c "$FERRY_WAN_SERVER_ADDR" -p 7777 -n 4M`
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, &env{stdout: &stdout, stderr: &stderr}, []string{"wan", "-delay", "2ms", "-rate", "100M",
		"-server", server, "-wait-port", "7777", "-client", client})
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	for _, want := range []string{"iperf Done", "idle RTT", "delay error", "queue drops"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	stdout.Reset()
	stderr.Reset()
	code = runMain(ctx, &env{stdout: &stdout, stderr: &stderr}, []string{"wan", "-client", "exit 3"})
	if code != 3 {
		t.Errorf("failing client: exit status %d, want 3; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "idle RTT") {
		t.Errorf("no report after a failing client:\n%s", stdout.String())
	}
}
