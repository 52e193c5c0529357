// Package bidi is a small WebDriver BiDi client for tests that drive a
// real Firefox (Debian's firefox-esr), which speaks the protocol natively:
// no geckodriver, no browser download.
//
// The protocol (https://w3c.github.io/webdriver-bidi/) is JSON over one
// WebSocket. The client sends commands {id, method, params}; the browser
// answers each with {type: "success", id, result} or {type: "error", id,
// error, message, stacktrace}, and sends events {type: "event", method,
// params} to sessions subscribed to them:
//
//	client                                   Firefox
//	  session.new {capabilities}        →
//	                                    ←    success {sessionId}
//	  session.subscribe {events}        →
//	  browsingContext.getTree {}        →
//	                                    ←    success {contexts: [{context}]}
//	  browsingContext.navigate {…}      →
//	  script.evaluate {expression, …}   →
//	                                    ←    event log.entryAdded {…}
//	                                    ←    success {type: "success", result}
//	  input.performActions {actions}    →
//
// Conn is the transport (commands and events); Firefox starts a headless
// browser for a test and opens a session on it; Page drives one browsing
// context with real input (input.performActions) and script evaluation.
package bidi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/net/websocket"
)

// Error is an error reply to a command.
type Error struct {
	Method  string // the command
	Code    string // the protocol's error code, such as "no such element"
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("bidi: %s: %s: %s", e.Method, e.Code, e.Message) }

// ErrClosed is returned by calls on a closed connection, or one the
// browser closed.
var ErrClosed = errors.New("bidi: connection closed")

// Event is an event the browser sent.
type Event struct {
	Method string
	Params json.RawMessage
}

// Conn is a WebDriver BiDi connection. Its methods may be called from
// several goroutines.
type Conn struct {
	ws      *websocket.Conn
	onEvent func(Event) // called on the reader goroutine; may be nil
	done    chan struct{}

	wmu sync.Mutex // serialises writes to ws

	mu      sync.Mutex
	next    int64                    // guarded by mu
	pending map[int64]chan *response // guarded by mu
	err     error                    // why the reader stopped; guarded by mu
}

// response is a command's reply or an event, as the browser sends them.
type response struct {
	Type    string          `json:"type"`
	ID      *int64          `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// Dial connects to the WebSocket at url (ws://HOST:PORT/session).
// onEvent, when not nil, is called with each event in order, on the
// goroutine that reads the connection: it must not block on a call.
func Dial(ctx context.Context, url string, onEvent func(Event)) (*Conn, error) {
	// Firefox refuses connections that carry an Origin header unless
	// the origin is allowed (--remote-allow-origins); x/net/websocket
	// always sends one, so Firefox starts with this origin allowed.
	cfg, err := websocket.NewConfig(url, Origin)
	if err != nil {
		return nil, fmt.Errorf("bidi: %w", err)
	}
	ws, err := cfg.DialContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("bidi: %w", err)
	}
	// Screenshots and large results arrive as one frame.
	ws.MaxPayloadBytes = 256 << 20
	c := &Conn{ws: ws, onEvent: onEvent, done: make(chan struct{}), pending: map[int64]chan *response{}}
	go c.read()
	return c, nil
}

// Origin is the Origin header the client sends.
const Origin = "http://127.0.0.1"

// read delivers replies to their callers and events to onEvent until the
// connection ends.
func (c *Conn) read() {
	var err error
	for {
		var msg []byte
		if err = websocket.Message.Receive(c.ws, &msg); err != nil {
			break
		}
		r := new(response)
		if err = json.Unmarshal(msg, r); err != nil {
			err = fmt.Errorf("bidi: bad message %.200q: %w", msg, err)
			break
		}
		if r.Type == "event" {
			if c.onEvent != nil {
				c.onEvent(Event{Method: r.Method, Params: r.Params})
			}
			continue
		}
		if r.ID == nil {
			continue // an error about a message without an id
		}
		c.mu.Lock()
		ch := c.pending[*r.ID]
		delete(c.pending, *r.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	c.mu.Lock()
	c.err = errors.Join(ErrClosed, err)
	c.mu.Unlock()
	close(c.done)
}

// Call sends the command method with params (any JSON value; nil is
// {}) and decodes its result into result, unless result is nil.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	if params == nil {
		params = struct{}{}
	}
	ch := make(chan *response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	msg, err := json.Marshal(struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params"`
	}{id, method, params})
	if err != nil {
		forget()
		return fmt.Errorf("bidi: %s: %w", method, err)
	}
	c.wmu.Lock()
	err = websocket.Message.Send(c.ws, string(msg))
	c.wmu.Unlock()
	if err != nil {
		forget()
		return fmt.Errorf("bidi: %s: %w", method, err)
	}
	var r *response
	select {
	case r = <-ch:
	case <-c.done:
		select {
		case r = <-ch: // the reply came just before the end
		default:
			c.mu.Lock()
			defer c.mu.Unlock()
			return fmt.Errorf("bidi: %s: %w", method, c.err)
		}
	case <-ctx.Done():
		forget()
		return fmt.Errorf("bidi: %s: %w", method, context.Cause(ctx))
	}
	if r.Type == "error" {
		return &Error{Method: method, Code: r.Error, Message: r.Message}
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("bidi: %s: result %.200q: %w", method, r.Result, err)
	}
	return nil
}

// Close closes the connection and waits for its reader to stop.
func (c *Conn) Close() error {
	err := c.ws.Close()
	<-c.done
	return err
}
