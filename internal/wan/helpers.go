package wan

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Do runs f on an OS thread inside the side's namespace: sockets f opens
// (net.Listen, net.Dial) live there and keep working after f returns.
func (l *Link) Do(s Side, f func() error) error { return inNetns(context.Background(), l.ns[s], f) }

// WaitListening waits until a TCP socket listens on port in the side's
// namespace, looking at the namespace's socket table so that no packet
// crosses the link.
func (l *Link) WaitListening(ctx context.Context, s Side, port int) error {
	want := fmt.Sprintf(":%04X ", port)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var found bool
		err := l.Do(s, func() error {
			for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
				b, err := os.ReadFile(f)
				if err != nil {
					continue
				}
				for _, line := range strings.Split(string(b), "\n")[1:] {
					fields := strings.Fields(line)
					// Fields: sl local_address rem_address st ...; 0A is LISTEN.
					if len(fields) > 3 && strings.HasSuffix(fields[1]+" ", want) && fields[3] == "0A" {
						found = true
					}
				}
			}
			return nil
		})
		if err != nil || found {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wan: nothing listens on port %d in the %v namespace: %w", port, s, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// ParseRate parses a rate in bit/s with an optional decimal suffix K, M,
// G or T (and an optional "bit", "bps" or "b/s"), e.g. "1G" or
// "100Mbit"; "0" is unlimited.
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	for _, suffix := range []string{"bit/s", "bit", "bps", "b/s"} {
		t = strings.TrimSuffix(t, suffix)
	}
	mult := 1.0
	if t != "" {
		switch strings.ToUpper(t[len(t)-1:]) {
		case "K":
			mult = 1e3
		case "M":
			mult = 1e6
		case "G":
			mult = 1e9
		case "T":
			mult = 1e12
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1e15 {
		return 0, fmt.Errorf("bad rate %q (want e.g. 1G, 100M, 0)", s)
	}
	return int64(v * mult), nil
}

// ParseLoss parses a probability as a percentage ("1%", "0.5%") or a
// fraction ("0.01").
func ParseLoss(s string) (float64, error) {
	t := strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(t, "%") {
		t, div = strings.TrimSuffix(t, "%"), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v/div >= 0 && v/div <= 1) {
		return 0, fmt.Errorf("bad loss %q (want e.g. 1%% or 0.01)", s)
	}
	return v / div, nil
}

// ParseDir parses "to-client", "to-server" or "both".
func ParseDir(s string) (Dir, error) {
	for _, d := range []Dir{ToClient, ToServer, Both} {
		if s == d.String() {
			return d, nil
		}
	}
	return 0, fmt.Errorf("bad direction %q (want to-client, to-server or both)", s)
}
