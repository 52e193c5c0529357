package wan

import (
	"encoding/binary"
	"errors"
)

// The virtio_net_hdr that a TUN opened with IFF_VNET_HDR puts before every
// packet it hands out and expects before every packet written to it
// (include/uapi/linux/virtio_net.h). Its fields are in host byte order;
// Ferry runs on little-endian Linux only, as TUN's default is native order.
const (
	vnetHdrLen = 10

	vnetFlagNeedsCsum = 1

	gsoNone  = 0
	gsoTCPv4 = 1
	gsoTCPv6 = 4
	gsoECN   = 0x80
)

// vnetHdr is a decoded virtio_net_hdr.
type vnetHdr struct {
	flags      uint8
	gsoType    uint8
	hdrLen     uint16
	gsoSize    uint16
	csumStart  uint16
	csumOffset uint16
}

func decodeVnetHdr(b []byte) (vnetHdr, error) {
	if len(b) < vnetHdrLen {
		return vnetHdr{}, errShort
	}
	return vnetHdr{
		flags:      b[0],
		gsoType:    b[1],
		hdrLen:     binary.LittleEndian.Uint16(b[2:]),
		gsoSize:    binary.LittleEndian.Uint16(b[4:]),
		csumStart:  binary.LittleEndian.Uint16(b[6:]),
		csumOffset: binary.LittleEndian.Uint16(b[8:]),
	}, nil
}

func (h vnetHdr) encode(b []byte) {
	b[0] = h.flags
	b[1] = h.gsoType
	binary.LittleEndian.PutUint16(b[2:], h.hdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.gsoSize)
	binary.LittleEndian.PutUint16(b[6:], h.csumStart)
	binary.LittleEndian.PutUint16(b[8:], h.csumOffset)
}

var (
	errShort       = errors.New("wan: packet too short")
	errNotTCP      = errors.New("wan: GSO packet is not plain TCP over IPv4 or IPv6")
	errBadGSO      = errors.New("wan: unsupported GSO type")
	errBadHeader   = errors.New("wan: malformed IP or TCP header")
	errSegmentSize = errors.New("wan: GSO segment size is zero")
)

// superPacket is one packet read from a TUN with its virtio_net_hdr, parsed
// far enough to cut it into the segments the sender's TCP asked for (TSO).
// A packet without GSO is one segment and is never rewritten.
type superPacket struct {
	hdr     vnetHdr
	pkt     []byte // the IP packet after the virtio_net_hdr
	ipv6    bool
	ipLen   int // IP header length
	l4Len   int // TCP header length (GSO only)
	mss     int // payload bytes per segment (GSO only)
	payload int // TCP payload bytes (GSO only)
	nseg    int
}

// parseSuperPacket parses b, a virtio_net_hdr followed by an IP packet. It
// checks every length it will use, so that segment cannot index outside b.
func parseSuperPacket(b []byte) (superPacket, error) {
	h, err := decodeVnetHdr(b)
	if err != nil {
		return superPacket{}, err
	}
	p := superPacket{hdr: h, pkt: b[vnetHdrLen:], nseg: 1}
	if len(p.pkt) == 0 {
		return p, errShort
	}
	gso := h.gsoType &^ gsoECN
	if gso == gsoNone {
		return p, nil
	}
	if gso != gsoTCPv4 && gso != gsoTCPv6 {
		return p, errBadGSO
	}
	switch p.pkt[0] >> 4 {
	case 4:
		if len(p.pkt) < 20 {
			return p, errShort
		}
		p.ipLen = int(p.pkt[0]&0xf) * 4
		if p.ipLen < 20 || len(p.pkt) < p.ipLen || p.pkt[9] != 6 {
			return p, errNotTCP
		}
	case 6:
		p.ipv6 = true
		p.ipLen = 40
		if len(p.pkt) < p.ipLen || p.pkt[6] != 6 {
			return p, errNotTCP
		}
	default:
		return p, errNotTCP
	}
	if len(p.pkt) < p.ipLen+20 {
		return p, errShort
	}
	p.l4Len = int(p.pkt[p.ipLen+12]>>4) * 4
	if p.l4Len < 20 || len(p.pkt) < p.ipLen+p.l4Len {
		return p, errBadHeader
	}
	if h.gsoSize == 0 {
		return p, errSegmentSize
	}
	p.mss = int(h.gsoSize)
	p.payload = len(p.pkt) - p.ipLen - p.l4Len
	p.nseg = max(1, (p.payload+p.mss-1)/p.mss)
	return p, nil
}

// gso reports whether p is a super-packet to be cut into segments.
func (p *superPacket) gso() bool { return p.mss > 0 }

// segmentLen is the length of segment i as an IP packet.
func (p *superPacket) segmentLen(i int) int {
	start := i * p.mss
	return p.ipLen + p.l4Len + min(p.mss, p.payload-start)
}

// segment writes segment i of the GSO super-packet p into dst, a complete
// IP packet with correct lengths, IPv4 ID, TCP sequence number, flags and
// checksums, as the kernel's own GSO would have sent it, and returns its
// length. dst must hold p.segmentLen(i) bytes.
func (p *superPacket) segment(dst []byte, i int) int {
	hl := p.ipLen + p.l4Len
	start := i * p.mss
	end := min(start+p.mss, p.payload)
	n := hl + end - start
	copy(dst, p.pkt[:hl])
	copy(dst[hl:n], p.pkt[hl+start:hl+end])

	ip, tcp := dst[:p.ipLen], dst[p.ipLen:n]
	if p.ipv6 {
		binary.BigEndian.PutUint16(ip[4:], uint16(n-40))
	} else {
		binary.BigEndian.PutUint16(ip[2:], uint16(n))
		binary.BigEndian.PutUint16(ip[4:], binary.BigEndian.Uint16(ip[4:])+uint16(i))
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], ^checksum(ip, 0))
	}

	binary.BigEndian.PutUint32(tcp[4:], binary.BigEndian.Uint32(tcp[4:])+uint32(start))
	const fin, psh, cwr = 0x01, 0x08, 0x80
	if i != p.nseg-1 {
		tcp[13] &^= fin | psh
	}
	if i != 0 {
		tcp[13] &^= cwr
	}
	tcp[16], tcp[17] = 0, 0
	sum := pseudoHeaderSum(ip, p.ipv6, len(tcp))
	binary.BigEndian.PutUint16(tcp[16:], ^checksum(tcp, sum))
	return n
}

// pseudoHeaderSum is the unfolded sum of the TCP pseudo-header.
func pseudoHeaderSum(ip []byte, ipv6 bool, l4Len int) uint64 {
	var sum uint64
	if ipv6 {
		sum = sumBytes(ip[8:40])
	} else {
		sum = sumBytes(ip[12:20])
	}
	return sum + 6 + uint64(l4Len)
}

// checksum is the Internet checksum (RFC 1071) of b added to initial, folded
// to 16 bits but not inverted.
func checksum(b []byte, initial uint64) uint16 {
	sum := initial + sumBytes(b)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return uint16(sum)
}

// sumBytes adds b as big-endian 16-bit words, 32 bits at a time.
func sumBytes(b []byte) uint64 {
	var sum uint64
	for len(b) >= 32 {
		sum += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:])) +
			uint64(binary.BigEndian.Uint32(b[8:])) + uint64(binary.BigEndian.Uint32(b[12:])) +
			uint64(binary.BigEndian.Uint32(b[16:])) + uint64(binary.BigEndian.Uint32(b[20:])) +
			uint64(binary.BigEndian.Uint32(b[24:])) + uint64(binary.BigEndian.Uint32(b[28:]))
		b = b[32:]
	}
	for len(b) >= 4 {
		sum += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		sum += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint64(b[0]) << 8
	}
	return sum
}
