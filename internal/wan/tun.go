package wan

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tunName is the TUN device's name in each namespace; the namespaces are
// separate, so both may use it.
const tunName = "ferry0"

// openTUN creates a TUN device with virtio_net_hdr framing and TCP
// segmentation offload in the namespace the calling thread is in, and
// returns its non-blocking file descriptor. The device is not persistent:
// it vanishes when the descriptor is closed.
func openTUN() (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("wan: open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(tunName)
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("wan: TUNSETIFF: %w", err)
	}
	// With these offloads the kernel hands over the sender's TSO
	// super-packets (up to 64 KB) instead of 1500-byte frames: one read per
	// super-packet, which is what lets one forwarder carry gigabits.
	offload := unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETOFFLOAD, uintptr(offload)); e != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("wan: TUNSETOFFLOAD: %w", e)
	}
	hdrSize := int32(vnetHdrLen)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETVNETHDRSZ, uintptr(unsafe.Pointer(&hdrSize))); e != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("wan: TUNSETVNETHDRSZ: %w", e)
	}
	return fd, nil
}
