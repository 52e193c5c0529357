package chaos

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/ferrygrid/ferry/internal/wire"
)

// sniffedPort is the port a control line names, when it is a passive
// reply of the server (227 PASV, 229 EPSV) or a PORT or EPRT command of
// the client.
func sniffedPort(line string) (port int, ok bool) {
	verb, arg, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
	var ap netip.AddrPort
	var err error
	switch strings.ToUpper(verb) {
	case "227":
		ap, err = wire.ParsePASVReply(arg)
	case "229":
		ap, err = wire.ParseEPSVReply(arg)
	case "PORT":
		ap, err = wire.ParsePORT(arg)
	case "EPRT":
		ap, err = wire.ParseEPRT(arg)
	default:
		return 0, false
	}
	return int(ap.Port()), err == nil
}

// sniffer is a control channel proxy that calls announced with the port
// of every passive reply from the server (the server's listener) and of
// every PORT or EPRT from the client (the client's listener) before it
// forwards the line: a stranger learns of the port first.
type sniffer struct {
	ln        net.Listener
	server    string
	announced func(port int)
	wg        sync.WaitGroup
}

func startSniffer(server string, announced func(port int)) (*sniffer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sniffer{ln: ln, server: server, announced: announced}
	s.wg.Go(s.serve)
	return s, nil
}

func (s *sniffer) addr() string { return s.ln.Addr().String() }

func (s *sniffer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.relay(c) })
	}
}

func (s *sniffer) relay(c net.Conn) {
	defer c.Close()
	up, err := dialFrom(context.Background(), "", s.server, 0)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		// The client's commands: a PORT or EPRT names its listener.
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if p, ok := sniffedPort(line); ok {
				s.announced(p)
			}
			if line != "" {
				if _, werr := up.Write([]byte(line)); werr != nil {
					return
				}
			}
			if err != nil {
				up.Close()
				return
			}
		}
	}()
	br := bufio.NewReader(up)
	for {
		line, err := br.ReadString('\n')
		if p, ok := sniffedPort(line); ok {
			s.announced(p)
		}
		if line != "" {
			if _, werr := c.Write([]byte(line)); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *sniffer) close() {
	s.ln.Close()
	s.wg.Wait()
}
