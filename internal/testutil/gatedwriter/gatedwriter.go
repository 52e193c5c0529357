// Package gatedwriter has an io.WriterAt that holds a download running: its
// first write waits until the test opens the gate.
package gatedwriter

import "sync"

// Writer is an io.WriterAt whose first write waits for Open. It keeps
// nothing but the count of bytes written. Create it with New.
type Writer struct {
	started, open chan struct{}
	once          sync.Once
	mu            sync.Mutex
	n             int64 // guarded by mu
}

// New returns a Writer with its gate closed.
func New() *Writer {
	return &Writer{started: make(chan struct{}), open: make(chan struct{})}
}

// WriteAt counts p, once the gate is open.
func (g *Writer) WriteAt(p []byte, off int64) (int, error) {
	g.once.Do(func() { close(g.started) })
	<-g.open
	g.mu.Lock()
	g.n += int64(len(p))
	g.mu.Unlock()
	return len(p), nil
}

// Started is closed when the first write arrives.
func (g *Writer) Started() <-chan struct{} { return g.started }

// Open lets the writes through; call it once.
func (g *Writer) Open() { close(g.open) }

// N is how many bytes were written.
func (g *Writer) N() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}
