package chaos

import (
	"bufio"
	"context"
	"net"
	"regexp"
	"strconv"
	"sync"
)

// pasvReply matches the port of a 229 (EPSV) or 227 (PASV) reply.
var (
	epsvReply = regexp.MustCompile(`^229 .*\(\|\|\|(\d+)\|\)`)
	pasvReply = regexp.MustCompile(`^227 .*\((\d+),(\d+),(\d+),(\d+),(\d+),(\d+)\)`)
	portCmd   = regexp.MustCompile(`(?i)^PORT \d+,\d+,\d+,\d+,(\d+),(\d+)`)
	eprtCmd   = regexp.MustCompile(`(?i)^EPRT \|\d\|[^|]*\|(\d+)\|`)
)

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
			if m := eprtCmd.FindStringSubmatch(line); m != nil {
				p, _ := strconv.Atoi(m[1])
				s.announced(p)
			} else if m := portCmd.FindStringSubmatch(line); m != nil {
				hi, _ := strconv.Atoi(m[1])
				lo, _ := strconv.Atoi(m[2])
				s.announced(hi<<8 | lo)
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
		if debugSniff {
			println("sniff:", line)
		}
		if m := epsvReply.FindStringSubmatch(line); m != nil {
			p, _ := strconv.Atoi(m[1])
			s.announced(p)
		} else if m := pasvReply.FindStringSubmatch(line); m != nil {
			hi, _ := strconv.Atoi(m[5])
			lo, _ := strconv.Atoi(m[6])
			s.announced(hi<<8 | lo)
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

var debugSniff = false
