package wan

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// refChecksum is the Internet checksum computed the slow, obvious way, to
// check the fast one against.
func refChecksum(chunks ...[]byte) uint16 {
	var all []byte
	for _, c := range chunks {
		all = append(all, c...)
	}
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	var sum uint32
	for i := 0; i < len(all); i += 2 {
		sum += uint32(all[i])<<8 | uint32(all[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

const (
	flagFIN = 0x01
	flagPSH = 0x08
	flagACK = 0x10
	flagCWR = 0x80
)

// superTCP builds a virtio_net_hdr and a TCP super-packet carrying payload
// with the given GSO segment size, the way the kernel hands one over.
func superTCP(ipv6 bool, mss int, payload []byte, flags byte) []byte {
	hdr := vnetHdr{flags: vnetFlagNeedsCsum, gsoType: gsoTCPv4, gsoSize: uint16(mss), csumOffset: 16}
	var ip []byte
	if ipv6 {
		hdr.gsoType = gsoTCPv6
		ip = make([]byte, 40)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(32+len(payload)))
		ip[6], ip[7] = 6, 64
		copy(ip[8:], []byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
		copy(ip[24:], []byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
	} else {
		ip = make([]byte, 20)
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(20+32+len(payload)))
		binary.BigEndian.PutUint16(ip[4:], 0x1234)
		ip[6] = 0x40 // DF
		ip[8], ip[9] = 64, 6
		copy(ip[12:], []byte{10, 77, 0, 2, 10, 77, 0, 1})
	}
	hdr.csumStart = uint16(len(ip))
	hdr.hdrLen = uint16(len(ip) + 32)
	tcp := make([]byte, 32) // with 12 bytes of options (timestamps)
	binary.BigEndian.PutUint16(tcp[0:], 5201)
	binary.BigEndian.PutUint16(tcp[2:], 40000)
	binary.BigEndian.PutUint32(tcp[4:], 0xfffff000) // wraps within the packet
	binary.BigEndian.PutUint32(tcp[8:], 77)
	tcp[12] = 8 << 4
	tcp[13] = flags
	binary.BigEndian.PutUint16(tcp[14:], 512)
	tcp[20], tcp[21], tcp[22], tcp[23] = 1, 1, 8, 10
	tcp[16], tcp[17] = 0xbe, 0xef // a partial checksum the split must replace
	b := make([]byte, vnetHdrLen)
	hdr.encode(b)
	b = append(b, ip...)
	b = append(b, tcp...)
	return append(b, payload...)
}

func TestSegment(t *testing.T) {
	payload := make([]byte, 3*1448+101)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	for _, tc := range []struct {
		name string
		ipv6 bool
		mss  int
		size int
	}{
		{"ipv4", false, 1448, len(payload)},
		{"ipv6", true, 1428, len(payload)},
		{"ipv4 exact multiple", false, 1000, 3000},
		{"ipv4 odd mss", false, 999, 3001},
		{"ipv4 one segment", false, 1448, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := superTCP(tc.ipv6, tc.mss, payload[:tc.size], flagACK|flagPSH|flagFIN|flagCWR)
			p, err := parseSuperPacket(in)
			if err != nil {
				t.Fatal(err)
			}
			want := (tc.size + tc.mss - 1) / tc.mss
			if !p.gso() || p.nseg != want {
				t.Fatalf("gso %v, %d segments; want %d", p.gso(), p.nseg, want)
			}
			var joined []byte
			buf := make([]byte, maxRead)
			for i := range p.nseg {
				n := p.segment(buf, i)
				if n != p.segmentLen(i) {
					t.Fatalf("segment %d: length %d, segmentLen %d", i, n, p.segmentLen(i))
				}
				seg := buf[:n]
				ipLen := 20
				var pseudo []byte
				if tc.ipv6 {
					ipLen = 40
					if got := int(binary.BigEndian.Uint16(seg[4:])); got != n-40 {
						t.Errorf("segment %d: payload length %d, want %d", i, got, n-40)
					}
					pseudo = append(append([]byte{}, seg[8:40]...), 0, 0, byte((n-40)>>8), byte(n-40), 0, 0, 0, 6)
				} else {
					if got := int(binary.BigEndian.Uint16(seg[2:])); got != n {
						t.Errorf("segment %d: total length %d, want %d", i, got, n)
					}
					if refChecksum(seg[:20]) != 0 {
						t.Errorf("segment %d: bad IPv4 header checksum", i)
					}
					if id := binary.BigEndian.Uint16(seg[4:]); id != 0x1234+uint16(i) {
						t.Errorf("segment %d: IP ID %#x, want %#x", i, id, 0x1234+i)
					}
					pseudo = append(append([]byte{}, seg[12:20]...), 0, 6, byte((n-20)>>8), byte(n-20))
				}
				tcp := seg[ipLen:]
				if refChecksum(pseudo, tcp) != 0 {
					t.Errorf("segment %d: bad TCP checksum", i)
				}
				if seq := binary.BigEndian.Uint32(tcp[4:]); seq != 0xfffff000+uint32(i*tc.mss) {
					t.Errorf("segment %d: seq %#x, want %#x", i, seq, 0xfffff000+uint32(i*tc.mss))
				}
				last, first := i == p.nseg-1, i == 0
				if f := tcp[13]; (f&flagFIN != 0) != last || (f&flagPSH != 0) != last || (f&flagCWR != 0) != first || f&flagACK == 0 {
					t.Errorf("segment %d: flags %#x", i, f)
				}
				if !bytes.Equal(tcp[20:32], in[vnetHdrLen+ipLen+20:vnetHdrLen+ipLen+32]) {
					t.Errorf("segment %d: TCP options changed", i)
				}
				if len(tcp)-32 > tc.mss {
					t.Errorf("segment %d: %d payload bytes, more than the MSS %d", i, len(tcp)-32, tc.mss)
				}
				joined = append(joined, tcp[32:]...)
			}
			if !bytes.Equal(joined, payload[:tc.size]) {
				t.Errorf("segments carry %d bytes that differ from the %d sent", len(joined), tc.size)
			}
		})
	}
}

func TestChecksumMatchesReference(t *testing.T) {
	b := make([]byte, 1501)
	for i := range b {
		b[i] = byte(i*31 + 5)
	}
	for n := range len(b) {
		if got, want := ^checksum(b[:n], 0), refChecksum(b[:n]); got != want {
			t.Fatalf("length %d: checksum %#x, want %#x", n, got, want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	good := superTCP(false, 1448, make([]byte, 3000), flagACK)
	for _, tc := range []struct {
		name   string
		mangle func(b []byte) []byte
	}{
		{"short header", func(b []byte) []byte { return b[:5] }},
		{"no packet", func(b []byte) []byte { return b[:vnetHdrLen] }},
		{"udp gso", func(b []byte) []byte { b[1] = 3; return b }},
		{"not tcp", func(b []byte) []byte { b[vnetHdrLen+9] = 17; return b }},
		{"ip version", func(b []byte) []byte { b[vnetHdrLen] = 0x55; return b }},
		{"ihl too small", func(b []byte) []byte { b[vnetHdrLen] = 0x44; return b }},
		{"tcp offset too small", func(b []byte) []byte { b[vnetHdrLen+32] = 4 << 4; return b }},
		{"tcp offset beyond packet", func(b []byte) []byte { return b[:vnetHdrLen+20+24] }},
		{"zero gso size", func(b []byte) []byte { b[4], b[5] = 0, 0; return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseSuperPacket(tc.mangle(bytes.Clone(good))); err == nil {
				t.Error("parsed without error")
			}
		})
	}
	// A packet without GSO is one segment, whatever it holds.
	plain := bytes.Clone(good)
	plain[1] = gsoNone
	if p, err := parseSuperPacket(plain); err != nil || p.gso() || p.nseg != 1 {
		t.Errorf("plain packet: %+v, %v", p, err)
	}
}

// FuzzParseSuperPacket feeds arbitrary TUN reads to the parser and cuts
// whatever it accepts into segments: nothing may panic or index outside
// the packet, and the segments must carry exactly the payload.
func FuzzParseSuperPacket(f *testing.F) {
	f.Add(superTCP(false, 1448, make([]byte, 5000), flagACK|flagPSH))
	f.Add(superTCP(true, 1000, make([]byte, 2001), flagACK))
	f.Add(superTCP(false, 1, make([]byte, 300), flagACK))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x45})
	buf := make([]byte, maxRead+64)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxRead {
			return
		}
		p, err := parseSuperPacket(b)
		if err != nil || !p.gso() {
			return
		}
		total := 0
		for i := range p.nseg {
			n := p.segmentLen(i)
			if n > len(buf) {
				t.Fatalf("segment %d of %d bytes", i, n)
			}
			if got := p.segment(buf, i); got != n {
				t.Fatalf("segment %d: %d bytes, segmentLen %d", i, got, n)
			}
			total += n - p.ipLen - p.l4Len
		}
		if total != p.payload {
			t.Fatalf("segments carry %d payload bytes, packet %d", total, p.payload)
		}
	})
}
