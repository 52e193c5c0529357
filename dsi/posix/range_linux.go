package posix

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// splice(2) flags; the syscall package does not name them.
const (
	spliceMove     = 0x1 // SPLICE_F_MOVE
	spliceNonblock = 0x2 // SPLICE_F_NONBLOCK
)

const (
	// maxSendfile bounds one sendfile(2) call (the kernel moves at most
	// about 2 GiB per call anyway).
	maxSendfile = 1 << 30
	// pipeSize is the pipe capacity asked for by splice; the kernel
	// default of 64 KiB is used when the request fails.
	pipeSize = 1 << 20
)

// unsupported reports whether a sendfile or splice error means that the
// descriptors cannot be used this way, so a plain copy should be tried.
func unsupported(e error) bool {
	return e == syscall.EINVAL || e == syscall.ENOSYS || e == syscall.EOPNOTSUPP
}

// sendfile writes n bytes at off from the file to the socket sc with
// sendfile(2). handled is false when the caller should copy the rest itself
// (sc has no usable descriptor or sendfile cannot be used on it); the
// returned count is then what was sent already.
func (r *Reader) sendfile(sc syscall.Conn, off, n int64) (done int64, handled bool, err error) {
	sock, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	file, err := r.f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	handled = true
	// Control keeps the file descriptor alive until it returns, even if
	// the Reader is closed meanwhile.
	cerr := file.Control(func(ffd uintptr) {
		werr := sock.Write(func(sfd uintptr) bool {
			for done < n {
				chunk := min(n-done, maxSendfile)
				o := off + done // explicit offset: the file position is never used
				m, e := syscall.Sendfile(int(sfd), int(ffd), &o, int(chunk))
				if m > 0 {
					done += int64(m)
				}
				switch {
				case e == syscall.EINTR:
				case e == syscall.EAGAIN:
					return false // wait until the socket is writable
				case e != nil:
					if done == 0 && unsupported(e) {
						handled = false
					} else {
						err = os.NewSyscallError("sendfile", e)
					}
					return true
				case m == 0:
					err = io.ErrUnexpectedEOF // the file ended early
					return true
				}
			}
			return true
		})
		if err == nil {
			err = werr
		}
	})
	if err == nil {
		err = cerr
	}
	return done, handled, err
}

// splice reads from the socket sc until n bytes have been read (n < 0:
// until end of stream) and writes them to f at off, with splice(2) through
// a private pipe. handled is false when the caller should copy the rest
// itself; the returned count is then what was stored already.
func splice(f *os.File, mu *sync.Mutex, sc syscall.Conn, off, n int64) (done int64, handled bool, err error) {
	sock, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	file, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	pp, ok := getPipe()
	if !ok {
		return 0, false, nil
	}
	defer func() {
		// Only a pipe known to be empty may serve another block.
		if err == nil && handled {
			putPipe(pp)
		} else {
			pp.close()
		}
	}()
	p, capacity := pp.fd, pp.capacity
	handled = true
	lowat := 1 // the socket's SO_RCVLOWAT; 1 again when this returns
	defer func() {
		if lowat != 1 {
			sock.Control(func(sfd uintptr) { setRcvLowat(sfd, 1) })
		}
	}()
	cerr := file.Control(func(ffd uintptr) {
		for n < 0 || done < n {
			want := capacity
			if n >= 0 && n-done < int64(want) {
				want = int(n - done)
			}
			// Socket → pipe, waiting in the poller while the socket is empty.
			var got int64
			var e error
			rerr := sock.Read(func(sfd uintptr) bool {
				for {
					got, e = syscall.Splice(int(sfd), nil, p[1], nil, want, spliceMove|spliceNonblock)
					if e == syscall.EAGAIN {
						// About to wait: be woken for a batch, not a packet.
						if v := rcvLowatFor(n, done); v != lowat && setRcvLowat(sfd, v) == nil {
							lowat = v
						}
						return false
					}
					if e != syscall.EINTR {
						return true
					}
				}
			})
			if rerr != nil {
				err = rerr
				return
			}
			if e != nil {
				if done == 0 && unsupported(e) {
					handled = false
				} else {
					err = os.NewSyscallError("splice", e)
				}
				return
			}
			if got == 0 { // end of stream
				if n >= 0 {
					err = io.ErrUnexpectedEOF
				}
				return
			}
			// Pipe → file at an explicit offset, one writer of f at a
			// time (see SharedFile).
			if mu != nil {
				mu.Lock()
			}
			m, fallback, ferr := pipeToFile(p[0], int(ffd), off+done, got)
			if mu != nil {
				mu.Unlock()
			}
			done += m
			if ferr != nil || fallback {
				err = ferr
				handled = !fallback || ferr != nil
				return
			}
		}
	})
	if err == nil {
		err = cerr
	}
	return done, handled, err
}

// pipeToFile moves the n bytes in the pipe pr to the file fd at off.
// fallback reports a file system that cannot take spliced data: what was
// in the pipe was copied (drain) and the caller copies the rest itself.
func pipeToFile(pr, fd int, off, n int64) (done int64, fallback bool, err error) {
	for done < n {
		o := off + done
		m, e := syscall.Splice(pr, nil, fd, &o, int(n-done), spliceMove)
		if e == syscall.EINTR {
			continue
		}
		if e != nil && unsupported(e) {
			m, err := drain(pr, fd, off+done, n-done)
			return done + m, true, err
		}
		if e != nil {
			return done, false, os.NewSyscallError("splice", e)
		}
		done += m
		splicedBytes.Add(m)
	}
	return done, false, nil
}

// rcvLowat is the SO_RCVLOWAT splice sets on a socket while at least that
// much of the range is still to come: the poller then wakes the reader
// once per rcvLowat bytes (or when the receive window is nearly full, or
// at the end of the stream) instead of once per few packets, which on a
// wide-area link costs a goroutine wake-up, a splice and an EAGAIN per
// arrival. Below it (the tail of a block, whose next header may never
// come on a connection kept for reuse) the mark is 1, as it is between
// calls.
const rcvLowat = 256 << 10

// rcvLowatFor is the SO_RCVLOWAT for waiting with done of n bytes
// stored (n < 0: until the end of the stream).
func rcvLowatFor(n, done int64) int {
	if n < 0 || n-done >= rcvLowat {
		return rcvLowat
	}
	return 1
}

// setRcvLowat sets the socket's SO_RCVLOWAT.
func setRcvLowat(fd uintptr, v int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, v)
}

// splicePipe is a pipe for splice(2), with its capacity.
type splicePipe struct {
	fd       [2]int // read end, write end
	capacity int
}

func (p splicePipe) close() {
	syscall.Close(p.fd[0])
	syscall.Close(p.fd[1])
}

// idlePipes keeps empty pipes between blocks: a pipe per block would cost
// pipe2, fcntl and two closes (and a fresh 1 MiB ring) per MiB moved.
// Enough for the streams of a transfer or two; more are closed. An idle
// 1 MiB pipe counts against the account's pipe quota
// (pipe-user-pages-soft, 64 MiB by default): 16 keep a quarter of it.
var idlePipes = make(chan splicePipe, 16)

// pipesMade counts the pipes getPipe has made (tests).
var pipesMade atomic.Int64

// getPipe returns an empty pipe, an idle one if there is one.
func getPipe() (splicePipe, bool) {
	select {
	case p := <-idlePipes:
		return p, true
	default:
	}
	pipesMade.Add(1)
	p := splicePipe{capacity: 64 << 10}
	if err := syscall.Pipe2(p.fd[:], syscall.O_CLOEXEC); err != nil {
		return p, false
	}
	if sz, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p.fd[1]), syscall.F_SETPIPE_SZ, pipeSize); e == 0 {
		p.capacity = int(sz)
	}
	return p, true
}

// putPipe keeps the empty pipe p for a later block, or closes it.
func putPipe(p splicePipe) {
	select {
	case idlePipes <- p:
	default:
		p.close()
	}
}

// drain moves n bytes from the pipe pr to the file fd at off with read(2)
// and pwrite(2).
func drain(pr, fd int, off, n int64) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var done int64
	for done < n {
		m, e := syscall.Read(pr, buf[:min(n-done, int64(len(buf)))])
		if e == syscall.EINTR {
			continue
		}
		if e != nil {
			return done, os.NewSyscallError("read", e)
		}
		if m <= 0 {
			return done, io.ErrUnexpectedEOF
		}
		for b := buf[:m]; len(b) > 0; {
			k, e := syscall.Pwrite(fd, b, off+done)
			if e == syscall.EINTR {
				continue
			}
			if e != nil {
				return done, os.NewSyscallError("pwrite", e)
			}
			b = b[k:]
			done += int64(k)
		}
	}
	return done, nil
}
