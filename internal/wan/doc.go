// Package wan emulates a wide-area network path on one Linux machine, for
// benchmarks that must see real round-trip times, loss and a bottleneck
// rate (ferry wan).
//
// A Link is two network namespaces, client and server, joined only by a
// pair of TUN devices (10.77.0.1 and 10.77.0.2, no other interfaces, no
// default route), and one forwarder in this process that owns both TUN
// descriptors. The forwarder holds every packet for a fixed one-way delay,
// releasing it at an absolute time with clock_nanosleep on a real-time
// thread, and drops segments at random from a seeded generator. An htb
// qdisc on each TUN's egress limits the rate and gives the sender the
// back-pressure a NIC would. The kernel here has no netem, so nothing in
// it can hold a packet until a time; see /work/shared/wan.md for what was
// measured before this design was chosen.
//
// The TUNs use virtio_net_hdr offloads: the sender's 64 KB TSO
// super-packets cross the forwarder in one read and one write, which is
// what lets it carry gigabits. Loss is decided per TCP segment; when a
// super-packet loses a segment the others are cut out of it and written
// one by one with fresh checksums (vnet.go).
//
// Start needs root and iproute2 (ip, tc).
package wan
