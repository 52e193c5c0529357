package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// site is a Ferry server on a root directory: plain, or striped with
// movers serving the same tree.
type site struct {
	h      *harness
	root   string
	serve  *proc
	movers []*proc
}

// startSite starts ferry serve on root (made under the scratch dir when
// empty), with n movers when n > 0, and extra serve flags.
func (h *harness) startSite(name, root string, movers int, extra ...string) (*site, error) {
	if root == "" {
		root = filepath.Join(h.scratch, name)
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
	}
	s := &site{h: h, root: root}
	h.cleanup = append(h.cleanup, s.close)
	args := []string{"serve", "-listen", "127.0.0.1:0", "-root", root, "-anonymous-write",
		"-run-as-mapped-user=false", "-shutdown-grace", "1s", "-log-level", "warn"}
	if movers > 0 {
		secret := filepath.Join(h.scratch, name+".secret")
		if err := os.WriteFile(secret, []byte("the chaos harness's mover secret"), 0o600); err != nil {
			return nil, err
		}
		var addrs []string
		for k := range movers {
			m := &proc{name: fmt.Sprintf("%s mover %d", name, k), bin: h.cfg.Ferry, ready: "Mover listening at ",
				args: []string{"mover", "-listen", "127.0.0.1:0", "-root", root, "-secret", secret,
					"-heartbeat", "100ms", "-timeout", "2s", "-log-level", "warn"}}
			if err := m.start(30 * time.Second); err != nil {
				return nil, err
			}
			s.movers = append(s.movers, m)
			addrs = append(addrs, m.addr)
		}
		args = append(args, "-movers", strings.Join(addrs, ","), "-mover-secret", secret,
			"-mover-heartbeat", "100ms", "-mover-timeout", "2s")
	}
	s.serve = &proc{name: name + " serve", bin: h.cfg.Ferry, ready: "Server listening at ", args: append(args, extra...)}
	if err := s.serve.start(30 * time.Second); err != nil {
		return nil, err
	}
	return s, s.waitUp(context.Background(), 30*time.Second)
}

func (s *site) url(p string) string { return "ftp://" + s.serve.addr + "/" + p }

// waitUp waits until the server logs in a client and, when striped,
// reports every mover up (SITE STRIPES).
func (s *site) waitUp(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	var last string
	for time.Now().Before(deadline) {
		c, err := login(ctx, "", s.serve.addr, 5*time.Second)
		if err == nil {
			if len(s.movers) == 0 {
				c.cmd(time.Second, "QUIT")
				c.close()
				return nil
			}
			_, text, _ := c.cmd(5*time.Second, "SITE STRIPES")
			c.cmd(time.Second, "QUIT")
			c.close()
			if strings.Count(text, " up since") == len(s.movers) {
				return nil
			}
			last = text
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not up within %v: %s", s.serve.name, bound, last)
}

// dumpAll sends SIGQUIT to the site's processes, returns their output and
// starts them again.
func (s *site) dumpAll() string {
	var b strings.Builder
	for _, p := range append([]*proc{s.serve}, s.movers...) {
		fmt.Fprintf(&b, "=== %s\n%s\n", p.name, p.dump())
	}
	for _, m := range s.movers {
		m.restartOn(30 * time.Second)
	}
	s.serve.restartOn(30 * time.Second)
	return b.String()
}

func (s *site) close() {
	if s.serve != nil {
		s.serve.stop()
	}
	for _, m := range s.movers {
		m.stop()
	}
}
