package server

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// checkLimiter bounds expensive checks (password hashing) running at once,
// in all and per client address. Callers wait their turn, bounded by
// maxCheckWait: one source cannot take every core, and a flood from many
// makes logins slower, never the machine unresponsive.
type checkLimiter struct {
	all    chan struct{}
	perSrc int

	mu   sync.Mutex
	srcs map[netip.Prefix]*sourceSlots // guarded by mu (xfer.Source)
}

type sourceSlots struct {
	sem   chan struct{}
	users int // callers holding or waiting for sem; guarded by checkLimiter.mu
}

// maxCheckWait bounds how long a login waits for a check slot.
const maxCheckWait = 30 * time.Second

// errChecksBusy refuses a login whose check could not start in time.
var errChecksBusy = fmt.Errorf("%w: too many logins being checked; try again later", pi.ErrLoginDenied)

func newCheckLimiter(all, perSource int) *checkLimiter {
	return &checkLimiter{all: make(chan struct{}, max(all, 1)), perSrc: max(perSource, 1), srcs: map[netip.Prefix]*sourceSlots{}}
}

// acquire waits for a slot of src and one of all; release frees both.
func (l *checkLimiter) acquire(ctx context.Context, addr netip.Addr) (release func(), err error) {
	src := xfer.Source(addr)
	ctx, cancel := context.WithTimeoutCause(ctx, maxCheckWait, errChecksBusy)
	defer cancel()
	l.mu.Lock()
	ss := l.srcs[src]
	if ss == nil {
		ss = &sourceSlots{sem: make(chan struct{}, l.perSrc)}
		l.srcs[src] = ss
	}
	ss.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if ss.users--; ss.users == 0 {
			delete(l.srcs, src)
		}
		l.mu.Unlock()
	}
	select {
	case ss.sem <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, busy(ctx)
	}
	select {
	case l.all <- struct{}{}:
	case <-ctx.Done():
		<-ss.sem
		leave()
		return nil, busy(ctx)
	}
	return sync.OnceFunc(func() {
		<-l.all
		<-ss.sem
		leave()
	}), nil
}

func busy(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, errChecksBusy) {
		return err
	}
	return fmt.Errorf("%w: %v", pi.ErrLoginDenied, context.Cause(ctx))
}
