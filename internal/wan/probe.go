package wan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"
)

// probeCount is how many timed echoes the idle RTT is the median of (after
// one untimed warm-up).
const probeCount = 7

// probe measures the idle round-trip time with UDP echoes between sockets
// opened inside the two namespaces, before any other traffic.
func (l *Link) probe(ctx context.Context) (time.Duration, error) {
	var srv, cli *net.UDPConn
	err := inNetns(l.ns[Server], func() (err error) {
		srv, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addrs[Server], 0)))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("wan: probe listener: %w", err)
	}
	defer srv.Close()
	err = inNetns(l.ns[Client], func() (err error) {
		cli, err = net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("wan: probe socket: %w", err)
	}
	defer cli.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			srv.WriteToUDPAddrPort(buf[:n], from)
		}
	}()

	timeout := 2*l.cfg.Delay + time.Second
	var rtts []time.Duration
	buf := make([]byte, 64)
	for i := 0; i < probeCount+1 && len(rtts) < probeCount; i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		msg := fmt.Appendf(nil, "ferry wan probe %d", i)
		start := time.Now()
		if _, err := cli.Write(msg); err != nil {
			return 0, fmt.Errorf("wan: probe: %w", err)
		}
		cli.SetReadDeadline(start.Add(timeout))
		for {
			n, err := cli.Read(buf)
			if err != nil {
				return 0, fmt.Errorf("wan: probe %d got no echo within %v: %w", i, timeout, err)
			}
			if string(buf[:n]) == string(msg) {
				break
			}
		}
		if i > 0 {
			rtts = append(rtts, time.Since(start))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(rtts) == 0 {
		return 0, errors.New("wan: no probe came back")
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], nil
}
