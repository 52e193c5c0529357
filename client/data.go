package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/ferrygrid/ferry/internal/dcsec"
	"github.com/ferrygrid/ferry/internal/dtp"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// dataChan is the data connection of one transfer while it is set up:
// dialed already (passive) or still to be accepted (active).
type dataChan struct {
	conn *net.TCPConn     // passive: connected; active: set by accept
	ln   *net.TCPListener // active only
	acc  *dtp.Acceptor    // active only: admits the server's connection
	wait time.Duration    // how long accept waits
}

// abortData closes the data connection with a reset, so that the server
// cannot take the end of the stream for the end of the file, and closes the
// listener.
func (d *dataChan) abortData() {
	if d.conn != nil {
		_ = d.conn.SetLinger(0)
		_ = d.conn.Close()
	}
	d.closeListener()
}

func (d *dataChan) closeListener() {
	if d.ln != nil {
		_ = d.ln.Close()
		d.ln = nil
	}
}

// dataPeer is the host data connections must come from: the server's
// end of the control connection, or any host (invalid) for a striped
// server.
func (c *Conn) dataPeer() netip.Addr {
	if c.anyData {
		return netip.Addr{}
	}
	return c.controlPeer()
}

// controlPeer is the IP address of the server's end of the control
// connection.
func (c *Conn) controlPeer() netip.Addr {
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// SameHost reports whether the server is on this host: its end of the
// control connection is a loopback address or ours.
func (c *Conn) SameHost() bool {
	peer := c.controlPeer()
	return peer.IsValid() && (peer.IsLoopback() || peer == c.controlLocal())
}

// controlLocal is the IP address of our end of the control connection.
func (c *Conn) controlLocal() netip.Addr {
	if a, ok := c.nc.LocalAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// openData sets up the data connection for the next transfer command:
// EPSV (or PASV) and a dial, or a listener and EPRT (or PORT). The
// watcher w interrupts the new sockets when the transfer's context is done.
// A *ReplyError or a dial error leaves the control connection in order;
// other errors come from the control connection (*brokenError).
func (c *Conn) openData(ctx context.Context, w *watcher) (*dataChan, error) {
	if c.active {
		return c.openActive(ctx, w)
	}
	ap, err := c.passive(ctx)
	if err != nil {
		return nil, err
	}
	tc, err := c.dialData(ctx, ap)
	if err != nil {
		return nil, err
	}
	w.add(tc)
	return &dataChan{conn: tc}, nil
}

// dialData dials one data connection to ap, with the transfer's socket
// buffer size set before the handshake.
func (c *Conn) dialData(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error) {
	if c.dataPol != nil {
		if err := c.dataPol(ap); err != nil {
			return nil, fmt.Errorf("client: data connection to %v refused: %w", ap, err)
		}
	}
	tc, err := dtp.Dial(ctx, c.dialer, ap, c.dataBuf)
	if err != nil {
		return nil, fmt.Errorf("client: data connection to %v: %w", ap, err)
	}
	return tc, nil
}

// listenData opens the listener for data connections the server makes,
// on the data interface (or our end of the control connection), with the
// transfer's socket buffer size, which accepted sockets inherit.
func (c *Conn) listenData() (*net.TCPListener, error) {
	ip := c.dataIf
	if !ip.IsValid() {
		ip = c.controlLocal()
	}
	l, err := dtp.Listen(context.Background(), ip, 0, 0, c.dataBuf)
	if err != nil {
		return nil, fmt.Errorf("client: data listener: %w", err)
	}
	return l, nil
}

// acceptor admits the server's data connections on an active listener:
// only from peer (any host when peer is invalid: c.dataPeer for a
// striped server), secured as the session's DCAU and PROT say, as the accepting
// side. Like the server's passive listener (it is the same code), it
// drops a stranger's connection, and one that fails its handshake,
// instead of failing the transfer.
func (c *Conn) acceptor(peer netip.Addr) *dtp.Acceptor {
	a := &dtp.Acceptor{Control: c.controlPeer()}
	if peer.IsValid() {
		a.Allow = func(from netip.AddrPort) error {
			if from.Addr().Unmap() != peer {
				return fmt.Errorf("client: a data connection from %v, not from the server's %v", from, peer)
			}
			return nil
		}
	}
	if c.dsec != nil {
		a.Secure = func(ctx context.Context, nc net.Conn) (net.Conn, error) { return c.secureData(ctx, nc, false) }
	}
	return a
}

// passive asks the server for a passive address: EPSV first, PASV after
// EPSV was refused once.
func (c *Conn) passive(ctx context.Context) (netip.AddrPort, error) {
	peer := c.controlPeer()
	if !c.noEPSV {
		r, err := c.exchange(ctx, "EPSV")
		if err != nil {
			return netip.AddrPort{}, err
		}
		switch {
		case r.Code == 229:
			ap, err := wire.ParseEPSVReply(r.Text())
			if err != nil {
				return netip.AddrPort{}, fmt.Errorf("client: %w", err)
			}
			if !ap.Addr().IsValid() {
				ap = netip.AddrPortFrom(peer, ap.Port())
			}
			return ap, nil
		case r.Code == 500 || r.Code == 502:
			c.noEPSV = true
		default:
			return netip.AddrPort{}, &ReplyError{Reply: r}
		}
	}
	r, err := c.exchange(ctx, "PASV")
	if err != nil {
		return netip.AddrPort{}, err
	}
	if r.Code != 227 {
		return netip.AddrPort{}, &ReplyError{Reply: r}
	}
	ap, err := wire.ParsePASVReply(r.Text())
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("client: %w", err)
	}
	return netip.AddrPortFrom(pasvHost(ap.Addr(), peer), ap.Port()), nil
}

// pasvHost corrects the address of a 227 reply: servers behind NAT or
// bound to all interfaces announce 0.0.0.0 or an internal address that the
// client cannot reach; then the control connection's peer is used.
func pasvHost(a, peer netip.Addr) netip.Addr {
	if !peer.IsValid() {
		return a
	}
	internal := func(x netip.Addr) bool { return x.IsPrivate() || x.IsLoopback() || x.IsLinkLocalUnicast() }
	if a.IsUnspecified() || (internal(a) && !internal(peer)) {
		return peer
	}
	return a
}

// openActive listens for the server's data connection and announces the
// address with EPRT, or PORT when EPRT was refused for an IPv4 address.
func (c *Conn) openActive(ctx context.Context, w *watcher) (*dataChan, error) {
	ln, err := c.listenData()
	if err != nil {
		return nil, err
	}
	d := &dataChan{ln: ln, acc: c.acceptor(c.dataPeer()), wait: c.dialer.Timeout}
	if d.wait <= 0 {
		d.wait = DefaultDialTimeout
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	ok, err := c.announce(ctx, ap)
	if err != nil || !ok {
		ln.Close()
		return nil, err
	}
	// The deadline bounds the wait for the server; set it before w may
	// move it into the past.
	_ = ln.SetDeadline(time.Now().Add(d.wait))
	w.add(ln)
	return d, nil
}

// announce sends EPRT or PORT for ap; ok is false with a *ReplyError.
func (c *Conn) announce(ctx context.Context, ap netip.AddrPort) (ok bool, err error) {
	if !c.noEPRT || !ap.Addr().Is4() {
		r, err := c.exchange(ctx, "EPRT "+wire.FormatEPRT(ap))
		if err != nil {
			return false, err
		}
		switch {
		case r.Class() == 2:
			return true, nil
		case ap.Addr().Is4() && (r.Code == 500 || r.Code == 502 || r.Code == 522):
			c.noEPRT = true
		default:
			return false, &ReplyError{Reply: r}
		}
	}
	arg, err := wire.FormatPORT(ap)
	if err != nil {
		return false, fmt.Errorf("client: %w", err)
	}
	r, err := c.exchange(ctx, "PORT "+arg)
	if err != nil {
		return false, err
	}
	if r.Class() != 2 {
		return false, &ReplyError{Reply: r}
	}
	return true, nil
}

// accept waits for the server's data connection in active mode (plain
// TCP: without DCAU, see secureAsync).
func (d *dataChan) accept(ctx context.Context) error {
	if d.conn != nil {
		return nil
	}
	defer d.closeListener()
	nc, err := d.acc.AcceptOne(ctx, d.ln, d.wait)
	if err != nil {
		return acceptError(err)
	}
	d.conn = tcpOf(nc)
	return nil
}

// acceptError is the error of an active-mode accept that got no
// connection: the listener's closing as it is, else why none came.
func acceptError(err error) error {
	var de *xfer.DataError
	if errors.As(err, &de) {
		err = de.Err
	}
	if errors.Is(err, net.ErrClosed) {
		return err
	}
	return fmt.Errorf("client: waiting for the server's data connection: %w", err)
}

// tcpOf is the TCP connection under a data connection.
func tcpOf(dc net.Conn) *net.TCPConn {
	switch nc := dcsec.NetConn(dc).(type) {
	case *net.TCPConn:
		return nc
	case ftpsTCP:
		return nc.TCPConn
	}
	return nil
}

// pendingData is a data connection being accepted and secured in the
// background while the control channel waits for the transfer command's
// reply: GCT finishes the data channel's security handshake before it
// sends 150, so the two must overlap.
type pendingData struct {
	cancel context.CancelFunc
	ln     *net.TCPListener // active mode: closed to stop the accept
	done   chan struct{}
	tc     *net.TCPConn // the TCP connection, once there is one
	dc     net.Conn     // the secured connection
	err    error
}

// secureAsync starts accepting (active mode) and securing d's data
// connection. finish must be called.
func (c *Conn) secureAsync(ctx context.Context, d *dataChan) *pendingData {
	hctx, cancel := context.WithCancel(ctx)
	p := &pendingData{cancel: cancel, ln: d.ln, done: make(chan struct{}), tc: d.conn}
	go func() {
		defer close(p.done)
		if p.tc != nil {
			p.dc, p.err = c.secureData(hctx, p.tc, true)
			return
		}
		p.dc, p.err = d.acc.AcceptOne(hctx, p.ln, d.wait)
		if p.err != nil {
			p.err = acceptError(p.err)
			return
		}
		p.tc = tcpOf(p.dc)
	}()
	return p
}

// finish waits for the background work, after stopping it when abandon
// is set, and hands the TCP connection to d (for clean-up). An error
// caused by abandoning is not reported, but a handshake that failed
// before is: the server's refusal is likely its consequence.
func (p *pendingData) finish(d *dataChan, abandon bool) (net.Conn, error) {
	if abandon {
		p.cancel()
		if p.ln != nil {
			p.ln.Close()
		}
	}
	<-p.done
	p.cancel()
	if p.tc != nil {
		d.conn = p.tc
	}
	d.closeListener()
	if abandon && (errors.Is(p.err, context.Canceled) || errors.Is(p.err, net.ErrClosed)) {
		if d.acc != nil {
			return nil, d.acc.LastRefused()
		}
		return nil, nil
	}
	return p.dc, p.err
}
