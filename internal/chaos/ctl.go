package chaos

import (
	"context"
	"fmt"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// ctl is a bare FTP control connection, for probes and attackers.
type ctl struct {
	conn net.Conn
	tp   *textproto.Conn
}

// dialFrom connects to addr from the local IP from ("" for any), with
// every exchange bounded by timeout.
func dialFrom(ctx context.Context, from, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return d.DialContext(ctx, "tcp", addr)
}

// login connects to addr from from and logs in anonymously.
func login(ctx context.Context, from, addr string, timeout time.Duration) (*ctl, error) {
	conn, err := dialFrom(ctx, from, addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &ctl{conn: conn, tp: textproto.NewConn(conn)}
	if code, msg, err := c.read(timeout); err != nil || code != 220 {
		conn.Close()
		return nil, fmt.Errorf("greeting: %d %s %v", code, msg, err)
	}
	if code, msg, err := c.cmd(timeout, "USER anonymous"); err != nil || code != 331 {
		conn.Close()
		return nil, fmt.Errorf("USER: %d %s %v", code, msg, err)
	}
	if code, msg, err := c.cmd(timeout, "PASS chaos@"); err != nil || code != 230 {
		conn.Close()
		return nil, fmt.Errorf("PASS: %d %s %v", code, msg, err)
	}
	return c, nil
}

func (c *ctl) read(timeout time.Duration) (int, string, error) {
	c.conn.SetDeadline(time.Now().Add(timeout))
	return c.tp.ReadResponse(0)
}

// cmd sends a command and reads its reply.
func (c *ctl) cmd(timeout time.Duration, line string) (int, string, error) {
	c.conn.SetDeadline(time.Now().Add(timeout))
	if err := c.tp.PrintfLine("%s", line); err != nil {
		return 0, "", err
	}
	return c.read(timeout)
}

// pasv asks for a passive data address (EPSV) and returns HOST:PORT.
func (c *ctl) pasv(timeout time.Duration) (string, error) {
	code, msg, err := c.cmd(timeout, "EPSV")
	if err != nil || code != 229 {
		return "", fmt.Errorf("EPSV: %d %s %v", code, msg, err)
	}
	// 229 Entering Extended Passive Mode (|||port|)
	i := strings.Index(msg, "(|||")
	j := strings.LastIndex(msg, "|)")
	if i < 0 || j < i+4 {
		return "", fmt.Errorf("EPSV reply %q", msg)
	}
	port, err := strconv.Atoi(msg[i+4 : j])
	if err != nil {
		return "", fmt.Errorf("EPSV reply %q", msg)
	}
	host, _, _ := net.SplitHostPort(c.conn.RemoteAddr().String())
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

func (c *ctl) close() { c.conn.Close() }
