package stripe

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// keyPair is both ends of one link.
func keyPair(t testing.TB, secret []byte) (front, mover *linkKeys) {
	t.Helper()
	nf, nm := bytes.Repeat([]byte{1}, nonceSize), bytes.Repeat([]byte{2}, nonceSize)
	front, err := deriveKeys(secret, nf, nm, true)
	if err != nil {
		t.Fatal(err)
	}
	mover, err = deriveKeys(secret, nf, nm, false)
	if err != nil {
		t.Fatal(err)
	}
	return front, mover
}

func TestSealRoundTrip(t *testing.T) {
	front, mover := keyPair(t, []byte("seal-secret"))
	msgs := []*Msg{
		{Type: TypePing},
		{Type: TypeSend, Seq: 3, Job: &Job{Path: "/x", Mode: xfer.ModeEBlock, Type: xfer.TypeImage, Length: -1, Size: -1}},
		{Type: TypeDone, Seq: 3, N: 99},
	}
	for i, want := range msgs {
		// Both directions, each with its own sequence.
		for _, dir := range []struct{ from, to *linkKeys }{{front, mover}, {mover, front}} {
			b, err := dir.from.send.seal(nil, want)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(`"path"`)) || bytes.Contains(b, []byte(`"n"`)) {
				t.Errorf("message %d travels in clear: %q", i, b)
			}
			got, err := dir.to.recv.open(b)
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			w, _ := AppendFrame(nil, want)
			g, _ := AppendFrame(nil, got)
			if !bytes.Equal(w, g) {
				t.Errorf("message %d changed:\n%s\n%s", i, w, g)
			}
		}
	}
}

func TestSealRefuses(t *testing.T) {
	secret := []byte("seal-secret")
	m := &Msg{Type: TypeAbort, Seq: 7}
	t.Run("every flipped byte", func(t *testing.T) {
		front, _ := keyPair(t, secret)
		b, _ := front.send.seal(nil, m)
		for i := 4; i < len(b); i++ { // the length is checked by framing
			_, mover := keyPair(t, secret)
			bad := bytes.Clone(b)
			bad[i] ^= 0x40
			if _, err := mover.recv.open(bad); err == nil {
				t.Fatalf("byte %d flipped: accepted", i)
			} else if i >= sealedHeaderSize && !errors.Is(err, ErrTampered) {
				t.Errorf("byte %d flipped: %v", i, err)
			}
		}
	})
	t.Run("replay and reorder", func(t *testing.T) {
		front, mover := keyPair(t, secret)
		f0, _ := front.send.seal(nil, m)
		f1, _ := front.send.seal(nil, m)
		if _, err := mover.recv.open(f0); err != nil {
			t.Fatal(err)
		}
		if _, err := mover.recv.open(f0); !errors.Is(err, ErrReplay) {
			t.Errorf("replayed frame: %v", err)
		}
		_, mover = keyPair(t, secret)
		if _, err := mover.recv.open(f1); !errors.Is(err, ErrReplay) {
			t.Errorf("frame 1 before frame 0: %v", err)
		}
	})
	t.Run("wrong direction, secret or link", func(t *testing.T) {
		front, _ := keyPair(t, secret)
		b, _ := front.send.seal(nil, m)
		if _, err := front.recv.open(b); !errors.Is(err, ErrTampered) {
			t.Errorf("frame reflected back to its sender: %v", err)
		}
		_, other := keyPair(t, []byte("other-secret"))
		if _, err := other.recv.open(b); !errors.Is(err, ErrTampered) {
			t.Errorf("other secret: %v", err)
		}
		fresh, err := deriveKeys(secret, bytes.Repeat([]byte{3}, nonceSize), bytes.Repeat([]byte{2}, nonceSize), false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fresh.recv.open(b); !errors.Is(err, ErrTampered) {
			t.Errorf("frame of another link: %v", err)
		}
	})
	t.Run("plain frame", func(t *testing.T) {
		_, mover := keyPair(t, secret)
		plain, _ := AppendFrame(nil, &Msg{Type: TypeAbort, Seq: 1, Text: "0123456789abcdef0123456789"})
		if _, err := mover.recv.open(plain); err == nil {
			t.Error("a plain frame was accepted")
		}
	})
}

func FuzzOpenSealed(f *testing.F) {
	secret := []byte("fuzz-secret")
	for _, m := range []*Msg{{Type: TypePing}, {Type: TypeDone, N: 5, Text: "x"}} {
		front, _ := keyPair(f, secret)
		b, _ := front.send.seal(nil, m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, mover := keyPair(t, secret)
		m, err := mover.recv.open(b)
		if err != nil {
			return
		}
		// Only a frame we sealed opens, and it seals again to itself.
		front, _ := keyPair(t, secret)
		again, err := front.send.seal(nil, m)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-seal: %v\n%q\n%q", err, again, b)
		}
	})
}
