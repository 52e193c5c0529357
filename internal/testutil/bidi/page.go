package bidi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// CallTimeout bounds each command a Page sends, and WaitTimeout each
// Wait.
var (
	CallTimeout = 3 * time.Minute
	WaitTimeout = 2 * time.Minute
)

// Page drives one browsing context (a tab). Its methods return errors;
// the test decides which are fatal.
type Page struct {
	Context string // the browsing context's id

	t    testing.TB
	conn *Conn

	mu   sync.Mutex
	logs []LogEntry // guarded by mu
}

// Conn is the page's connection, for commands Page has no method for.
func (p *Page) Conn() *Conn { return p.conn }

// Logs returns the console messages and uncaught errors so far.
func (p *Page) Logs() []LogEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]LogEntry(nil), p.logs...)
}

func (p *Page) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(p.t.Context(), CallTimeout)
	defer cancel()
	return p.conn.Call(ctx, method, params, result)
}

// Navigate loads url and waits until the document is complete.
func (p *Page) Navigate(url string) error {
	return p.call("browsingContext.navigate", map[string]any{"context": p.Context, "url": url, "wait": "complete"}, nil)
}

// evaluate runs a script.evaluate of expr, awaiting a promise, and
// returns its remote value.
func (p *Page) evaluate(expr string) (json.RawMessage, error) {
	var r struct {
		Type             string          `json:"type"`
		Result           json.RawMessage `json:"result"`
		ExceptionDetails struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	err := p.call("script.evaluate", map[string]any{
		"expression":           expr,
		"target":               map[string]any{"context": p.Context},
		"awaitPromise":         true,
		"resultOwnership":      "none",
		"serializationOptions": map[string]any{"maxDomDepth": 0, "maxObjectDepth": 0},
	}, &r)
	if err != nil {
		return nil, err
	}
	if r.Type == "exception" {
		return nil, fmt.Errorf("bidi: %.100s: %s", expr, r.ExceptionDetails.Text)
	}
	return r.Result, nil
}

// Eval evaluates the JavaScript expression expr in the page (awaiting
// it when it is a promise) and decodes its value, passed through
// JSON.stringify, into out, unless out is nil.
func (p *Page) Eval(expr string, out any) error {
	raw, err := p.evaluate(`(async () => JSON.stringify(await (` + expr + `)))()`)
	if err != nil {
		return err
	}
	var v struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("bidi: %.100s: result %s: %w", expr, raw, err)
	}
	if out == nil {
		return nil
	}
	if v.Type != "string" { // undefined
		v.Value = "null"
	}
	if err := json.Unmarshal([]byte(v.Value), out); err != nil {
		return fmt.Errorf("bidi: %.100s: result %s: %w", expr, v.Value, err)
	}
	return nil
}

// Wait polls the JavaScript expression cond until it is true, for at
// most WaitTimeout.
func (p *Page) Wait(cond string) error { return p.WaitFor(cond, WaitTimeout) }

// WaitFor polls the JavaScript expression cond until it is true, for at
// most d.
func (p *Page) WaitFor(cond string, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for {
		var ok bool
		last = p.Eval(`!!(`+cond+`)`, &ok)
		if last == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("bidi: waited %v for %s: %w", d, cond, last)
			}
			return fmt.Errorf("bidi: waited %v for %s", d, cond)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Quote is s as a JavaScript string literal.
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// VisibleJS is a JavaScript expression that is true when an element
// matches sel and is rendered (it has a box, and is not hidden).
func VisibleJS(sel string) string {
	return `((e) => e !== null && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden")(document.querySelector(` + Quote(sel) + `))`
}

// WaitVisible waits until an element matches sel and is rendered.
func (p *Page) WaitVisible(sel string) error { return p.Wait(VisibleJS(sel)) }

// Text returns the text content of the first element matching sel.
func (p *Page) Text(sel string) (string, error) {
	var s *string
	if err := p.Eval(`document.querySelector(`+Quote(sel)+`)?.textContent ?? null`, &s); err != nil {
		return "", err
	}
	if s == nil {
		return "", fmt.Errorf("bidi: no element matches %s", sel)
	}
	return *s, nil
}

// element scrolls the first element matching sel into the middle of the
// view and returns its shared reference, the origin of pointer actions.
func (p *Page) element(sel string) (map[string]any, error) {
	raw, err := p.evaluate(`(() => { const e = document.querySelector(` + Quote(sel) + `); if (e) e.scrollIntoView({block: "center", inline: "nearest"}); return e; })()`)
	if err != nil {
		return nil, err
	}
	var v struct {
		Type     string `json:"type"`
		SharedID string `json:"sharedId"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Type != "node" || v.SharedID == "" {
		return nil, fmt.Errorf("bidi: no element matches %s", sel)
	}
	return map[string]any{"type": "element", "element": map[string]any{"sharedId": v.SharedID}}, nil
}

// Actions performs input actions (input.performActions): each source is
// {type: "pointer"|"key"|"none", id, actions: [...]}.
func (p *Page) Actions(sources ...map[string]any) error {
	err := p.call("input.performActions", map[string]any{"context": p.Context, "actions": sources}, nil)
	if err != nil {
		return err
	}
	return p.call("input.releaseActions", map[string]any{"context": p.Context}, nil)
}

func mouse(actions ...map[string]any) map[string]any {
	return map[string]any{"type": "pointer", "id": "mouse", "parameters": map[string]any{"pointerType": "mouse"}, "actions": actions}
}

// Click moves the mouse to the middle of the first element matching
// sel and clicks the left button there.
func (p *Page) Click(sel string) error {
	origin, err := p.element(sel)
	if err != nil {
		return err
	}
	return p.Actions(mouse(
		map[string]any{"type": "pointerMove", "x": 0, "y": 0, "origin": origin},
		map[string]any{"type": "pointerDown", "button": 0},
		map[string]any{"type": "pointerUp", "button": 0},
	))
}

// Keys for Press and Type, as the WebDriver specification codes them.
const (
	Enter  = "\uE007"
	Escape = "\uE00C"
	Tab    = "\uE004"
)

// Press presses and releases each key of keys in turn, where the focus
// is: characters, or the codes above.
func (p *Page) Press(keys string) error {
	var as []map[string]any
	for _, k := range strings.Split(keys, "") {
		as = append(as, map[string]any{"type": "keyDown", "value": k}, map[string]any{"type": "keyUp", "value": k})
	}
	return p.Actions(map[string]any{"type": "key", "id": "keyboard", "actions": as})
}

// Type clicks the first element matching sel (a text field), puts the
// caret at the end of its text and types text there, key by key.
func (p *Page) Type(sel, text string) error {
	if err := p.Click(sel); err != nil {
		return err
	}
	if err := p.Eval(`((e) => { e.focus(); const n = e.value.length; e.setSelectionRange(n, n); return true; })(document.querySelector(`+Quote(sel)+`))`, nil); err != nil {
		return err
	}
	return p.Press(text)
}

// Drag presses the left button on the middle of the first element
// matching from, moves the mouse in steps to the middle of the first
// element matching to and releases it there: a native drag and drop.
func (p *Page) Drag(from, to string) error {
	src, err := p.element(from)
	if err != nil {
		return err
	}
	dst, err := p.element(to)
	if err != nil {
		return err
	}
	return p.Actions(mouse(
		map[string]any{"type": "pointerMove", "x": 0, "y": 0, "origin": src},
		map[string]any{"type": "pointerDown", "button": 0},
		map[string]any{"type": "pointerMove", "x": 5, "y": 5, "origin": src, "duration": 100},
		map[string]any{"type": "pointerMove", "x": 0, "y": 0, "origin": dst, "duration": 300},
		map[string]any{"type": "pause", "duration": 100},
		map[string]any{"type": "pointerUp", "button": 0},
	))
}

// Screenshot returns a PNG of the viewport.
func (p *Page) Screenshot() ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := p.call("browsingContext.captureScreenshot", map[string]any{"context": p.Context}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}
