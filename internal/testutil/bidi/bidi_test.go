package bidi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// fakeBrowser answers commands the way a BiDi server does: "echo"
// succeeds with its params, "fail" fails, "event" sends an event before
// its reply, "late" is answered after the following command, and "bye"
// closes the connection.
func fakeBrowser(t *testing.T) string {
	srv := httptest.NewServer(websocket.Handler(func(ws *websocket.Conn) {
		var late []byte
		for {
			var msg []byte
			if websocket.Message.Receive(ws, &msg) != nil {
				return
			}
			var cmd struct {
				ID     int64           `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal(msg, &cmd); err != nil {
				t.Errorf("bad command %q", msg)
				return
			}
			reply := func(v map[string]any) {
				b, _ := json.Marshal(v)
				websocket.Message.Send(ws, string(b))
			}
			switch cmd.Method {
			case "echo":
				reply(map[string]any{"type": "success", "id": cmd.ID, "result": cmd.Params})
			case "fail":
				reply(map[string]any{"type": "error", "id": cmd.ID, "error": "no such frame", "message": "gone"})
			case "event":
				reply(map[string]any{"type": "event", "method": "log.entryAdded", "params": map[string]any{"text": "hi"}})
				reply(map[string]any{"type": "success", "id": cmd.ID, "result": map[string]any{}})
			case "late":
				late, _ = json.Marshal(map[string]any{"type": "success", "id": cmd.ID, "result": map[string]any{"late": true}})
			case "bye":
				ws.Close()
				return
			}
			if late != nil && cmd.Method != "late" {
				websocket.Message.Send(ws, string(late))
				late = nil
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/session"
}

func TestConn(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	events := make(chan Event, 1)
	c, err := Dial(ctx, fakeBrowser(t), func(e Event) { events <- e })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var got map[string]int
	if err := c.Call(ctx, "echo", map[string]int{"a": 1}, &got); err != nil || got["a"] != 1 {
		t.Fatalf("echo: %v, %v", got, err)
	}
	err = c.Call(ctx, "fail", nil, nil)
	var be *Error
	if !errors.As(err, &be) || be.Code != "no such frame" || be.Method != "fail" {
		t.Fatalf("fail: %v", err)
	}
	if err := c.Call(ctx, "event", nil, nil); err != nil {
		t.Fatal(err)
	}
	if e := <-events; e.Method != "log.entryAdded" || !strings.Contains(string(e.Params), "hi") {
		t.Fatalf("event %+v", e)
	}
	// Replies out of order reach their callers.
	lateDone := make(chan error, 1)
	var late struct{ Late bool }
	go func() { lateDone <- c.Call(ctx, "late", nil, &late) }()
	time.Sleep(50 * time.Millisecond)
	if err := c.Call(ctx, "echo", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-lateDone; err != nil || !late.Late {
		t.Fatalf("late: %+v, %v", late, err)
	}
	// A command without an answer gives up with its context.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := c.Call(short, "ignored", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered: %v", err)
	}
	// The browser going away ends every call.
	if err := c.Call(ctx, "bye", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("bye: %v", err)
	}
	if err := c.Call(ctx, "echo", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after bye: %v", err)
	}
}

// TestFirefox drives a real Firefox: a page with a field and a button,
// typed into and clicked with real input events.
func TestFirefox(t *testing.T) {
	p := Firefox(t)
	const page = `<!doctype html><input id=f><button id=b onclick="document.title = document.getElementById('f').value">go</button>`
	if err := p.Navigate("data:text/html," + page); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitVisible("#b"); err != nil {
		t.Fatal(err)
	}
	if err := p.Type("#f", "héllo/1"); err != nil {
		t.Fatal(err)
	}
	if err := p.Click("#b"); err != nil {
		t.Fatal(err)
	}
	var title string
	if err := p.Eval(`document.title`, &title); err != nil || title != "héllo/1" {
		t.Fatalf("title %q, %v", title, err)
	}
	var n int
	if err := p.Eval(`new Promise((res) => setTimeout(() => res(41 + 1), 10))`, &n); err != nil || n != 42 {
		t.Fatalf("promise: %d, %v", n, err)
	}
	if err := p.Eval(`nosuchname`, nil); err == nil || !strings.Contains(err.Error(), "nosuchname") {
		t.Fatalf("a failing expression: %v", err)
	}
	png, err := p.Screenshot()
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
}
