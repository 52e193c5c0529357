package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/ferrygrid/ferry/internal/netopt"
	"github.com/ferrygrid/ferry/internal/wire"
)

// maxStrangers bounds how many connections from addresses other than the
// server's an active-mode listener drops before giving up.
const maxStrangers = 16

// dataChan is the data connection of one transfer while it is set up:
// dialed already (passive) or still to be accepted (active).
type dataChan struct {
	conn *net.TCPConn     // passive: connected; active: set by accept
	ln   *net.TCPListener // active only
	peer netip.Addr       // the server's control address; active accepts only it
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
// other errors come from the control connection (see exchangeError).
func (c *Conn) openData(ctx context.Context, w *watcher) (*dataChan, error) {
	if c.active {
		return c.openActive(w)
	}
	ap, err := c.passive()
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
	d := c.dialer
	if c.dataBuf > 0 {
		dd := *c.dialer
		dd.Control = netopt.BufferControl(c.dataBuf)
		d = &dd
	}
	nc, err := d.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("client: data connection to %v: %w", ap, err)
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("client: data connection to %v is a %T, not TCP", ap, nc)
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
	lc := net.ListenConfig{Control: netopt.BufferControl(c.dataBuf)}
	l, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		return nil, fmt.Errorf("client: data listener: %w", err)
	}
	return l.(*net.TCPListener), nil
}

// passive asks the server for a passive address: EPSV first, PASV after
// EPSV was refused once.
func (c *Conn) passive() (netip.AddrPort, error) {
	peer := c.controlPeer()
	if !c.noEPSV {
		r, err := c.exchange("EPSV")
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
	r, err := c.exchange("PASV")
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
func (c *Conn) openActive(w *watcher) (*dataChan, error) {
	ln, err := c.listenData()
	if err != nil {
		return nil, err
	}
	d := &dataChan{ln: ln, peer: c.dataPeer(), wait: c.dialer.Timeout}
	if d.wait <= 0 {
		d.wait = DefaultDialTimeout
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	ok, err := c.announce(ap)
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
func (c *Conn) announce(ap netip.AddrPort) (ok bool, err error) {
	if !c.noEPRT || !ap.Addr().Is4() {
		r, err := c.exchange("EPRT " + wire.FormatEPRT(ap))
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
	r, err := c.exchange("PORT " + arg)
	if err != nil {
		return false, err
	}
	if r.Class() != 2 {
		return false, &ReplyError{Reply: r}
	}
	return true, nil
}

// accept waits for the server's data connection in active mode; it drops
// connections from any address but the server's.
func (d *dataChan) accept() error {
	if d.conn != nil {
		return nil
	}
	defer d.closeListener()
	tc, err := acceptFrom(d.ln, d.peer)
	if err != nil {
		return err
	}
	d.conn = tc
	return nil
}

// acceptFrom accepts the first connection from peer (any address when
// peer is invalid) on ln, dropping up to maxStrangers others.
func acceptFrom(ln *net.TCPListener, peer netip.Addr) (*net.TCPConn, error) {
	for range maxStrangers {
		tc, err := ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			return nil, fmt.Errorf("client: waiting for the server's data connection: %w", err)
		}
		from := tc.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		if peer.IsValid() && from != peer {
			tc.Close()
			continue
		}
		return tc, nil
	}
	return nil, fmt.Errorf("client: %d data connections from addresses other than the server's %v", maxStrangers, peer)
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
	peer := d.peer
	go func() {
		defer close(p.done)
		tc := p.tc
		if tc == nil {
			var err error
			if tc, err = acceptFrom(p.ln, peer); err != nil {
				p.err = err
				return
			}
			p.tc = tc
		}
		p.dc, p.err = c.secureData(hctx, tc, p.ln == nil)
	}()
	return p
}

// finish waits for the background work, after stopping it when abandon
// is set, and hands the TCP connection to d (for clean-up). An error
// caused by abandoning is not reported.
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
	if abandon && errors.Is(p.err, context.Canceled) || abandon && errors.Is(p.err, net.ErrClosed) {
		return nil, nil
	}
	return p.dc, p.err
}
