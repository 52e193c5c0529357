package wan

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// probeCount is how many timed echoes the idle RTT is the minimum of
// (after one untimed warm-up). The minimum, like TCP's min_rtt, is the
// path's own round trip; the others add this machine's scheduling noise.
const probeCount = 7

// probe measures the idle round-trip time, before any other traffic, with
// ICMP echo requests from a raw socket in the client namespace, answered
// by the server namespace's kernel as a ping would be. The reply's arrival
// is the kernel's receive timestamp, so this process's wake-up latency is
// not counted: the figure is what TCP in the namespaces sees.
func (l *Link) probe(ctx context.Context) (time.Duration, error) {
	var conn *net.IPConn
	err := inNetns(ctx, l.ns[Client], func() (err error) {
		conn, err = net.ListenIP("ip4:icmp", &net.IPAddr{IP: addrs[Client].AsSlice()})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("wan: probe socket: %w", err)
	}
	defer conn.Close()
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	raw.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	})
	if err != nil {
		return 0, fmt.Errorf("wan: SO_TIMESTAMPNS: %w", err)
	}

	id := uint16(os.Getpid()) ^ uint16(seq.Load())
	to := &net.IPAddr{IP: addrs[Server].AsSlice()}
	timeout := 2*l.cfg.Delay + time.Second
	var rtts []time.Duration
	buf, oob := make([]byte, 1500), make([]byte, 128)
	for i := 0; i <= probeCount; i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		msg := echoRequest(id, uint16(i))
		sent := time.Now()
		if _, err := conn.WriteTo(msg, to); err != nil {
			return 0, fmt.Errorf("wan: probe: %w", err)
		}
		conn.SetReadDeadline(sent.Add(timeout))
		for {
			n, oobn, _, _, err := conn.ReadMsgIP(buf, oob)
			if err != nil {
				return 0, fmt.Errorf("wan: probe %d got no echo within %v: %w", i, timeout, err)
			}
			if !isEchoReply(buf[:n], id, uint16(i)) {
				continue
			}
			got := time.Now()
			if ts, ok := rxTimestamp(oob[:oobn]); ok && ts.After(sent) && ts.Before(got) {
				got = ts
			}
			if i > 0 {
				rtts = append(rtts, got.Sub(sent))
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(rtts) == 0 {
		return 0, errors.New("wan: no probe came back")
	}
	return slices.Min(rtts), nil
}

// echoRequest is an ICMP echo request with its checksum.
func echoRequest(id, seq uint16) []byte {
	b := make([]byte, 8, 8+16)
	b[0] = 8 // echo request
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	b = append(b, "ferry wan probe!"...)
	binary.BigEndian.PutUint16(b[2:], ^checksum(b, 0))
	return b
}

// isEchoReply reports whether b, an IPv4 packet as a raw socket returns
// it, is the echo reply to (id, seq).
func isEchoReply(b []byte, id, seq uint16) bool {
	if len(b) < 20 {
		return false
	}
	ihl := int(b[0]&0xf) * 4
	if len(b) < ihl+8 {
		return false
	}
	icmp := b[ihl:]
	return icmp[0] == 0 && binary.BigEndian.Uint16(icmp[4:]) == id && binary.BigEndian.Uint16(icmp[6:]) == seq
}

// rxTimestamp finds the SCM_TIMESTAMPNS receive time in control messages.
func rxTimestamp(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:]))
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}
