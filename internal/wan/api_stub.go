// Package wan emulates a wide-area network between two network namespaces.
//
// TEMPORARY STAND-IN: this file only declares the API that the emulator's
// own branch implements, so that "ferry bench wan" compiles on its branch.
// Start always fails. Delete this file when the real package is merged.
package wan

import (
	"context"
	"errors"
	"net/netip"
	"os/exec"
	"time"
)

// Side is one end of a link.
type Side int

// The two ends.
const (
	Client Side = iota
	Server
)

// Dir is a direction of traffic.
type Dir int

// The directions.
const (
	ToClient Dir = iota
	ToServer
	Both
)

// Config describes a link.
type Config struct {
	Delay     time.Duration
	Loss      float64 // probability, 0..1
	LossDir   Dir
	LossACKs  bool
	Rate      int64 // bit/s as Ethernet counts it (1e9: htb at 975300 kbit of IP bytes)
	Seed      int64
	Sysctls   map[string]string
	Calibrate bool
	Name      string
}

// Link is a running emulated link.
type Link struct{}

// Fidelity is what the emulator measured of itself.
type Fidelity struct {
	IdleRTT                               time.Duration
	Packets, LossDrops                    [2]uint64
	QueueDrops                            uint64
	LossMeasured                          [2]float64
	DelayErrP50, DelayErrP99, DelayErrMax time.Duration
	CPU, Wall                             time.Duration
}

// Start always fails in this stand-in.
func Start(ctx context.Context, cfg Config) (*Link, error) {
	return nil, errors.New("wan: emulator not merged")
}

// Namespace is not available in this stand-in.
func (l *Link) Namespace(s Side) string { return "" }

// Addr is not available in this stand-in.
func (l *Link) Addr(s Side) netip.Addr { return netip.Addr{} }

// Command is not available in this stand-in.
func (l *Link) Command(ctx context.Context, s Side, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

// Fidelity is not available in this stand-in.
func (l *Link) Fidelity() Fidelity { return Fidelity{} }

// Close is not available in this stand-in.
func (l *Link) Close() (Fidelity, error) { return Fidelity{}, errors.New("wan: emulator not merged") }
