package stripe

// Protected frames: after the handshake every frame of a link is sealed
// with AES-256-GCM under a per-direction key. No I/O here.
//
// Keys: HKDF-SHA256 over the shared secret, salted with both hello nonces
// (the frontend's first), one key per direction ("frontend to mover",
// "mover to frontend"). A key lives for one connection: fresh nonces make
// fresh keys, so frames of one link are worthless on any other.
//
// Sealed frame: [4-byte big-endian length L][8-byte sequence number]
// [L-8 bytes: AES-GCM of (type byte, JSON body), 16-byte tag]. The
// sequence number counts the direction's frames from 0; it is the GCM
// nonce (zero-padded) and, with the length, the additional data. The
// receiver wants exactly the next number, so a replayed, dropped or
// reordered frame is refused before decryption, and a changed byte
// anywhere fails the tag.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Key derivation labels; the version is part of them.
const (
	infoToMover    = "ferry-stripe-v2 frontend to mover"
	infoToFrontend = "ferry-stripe-v2 mover to frontend"
)

// sealedHeaderSize is the length and sequence prefix of a sealed frame.
const sealedHeaderSize = 12

// maxSealed bounds a sealed frame's length field.
const maxSealed = 8 + 1 + MaxFrame + 16

// ErrTampered reports a sealed frame that failed authentication.
var ErrTampered = errors.New("stripe: frame failed authentication (tampered, or not from the peer)")

// ErrReplay reports a sealed frame out of sequence: replayed, reordered,
// injected, or with a frame missing before it.
var ErrReplay = errors.New("stripe: frame out of sequence (replayed, reordered or injected)")

// sealer protects one direction of a link. Not safe for concurrent use.
type sealer struct {
	aead cipher.AEAD
	seq  uint64 // of the next frame
}

// linkKeys are a link's two directions, as one side sees them.
type linkKeys struct {
	send, recv *sealer
}

// deriveKeys makes the keys of a link from the secret and both nonces;
// frontend says which side we are.
func deriveKeys(secret, nonceFrontend, nonceMover []byte, frontend bool) (*linkKeys, error) {
	salt := append(append([]byte(nil), nonceFrontend...), nonceMover...)
	mk := func(info string) (*sealer, error) {
		key, err := hkdf.Key(sha256.New, secret, salt, info, 32)
		if err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		return &sealer{aead: aead}, nil
	}
	toMover, err := mk(infoToMover)
	if err != nil {
		return nil, fmt.Errorf("stripe: key derivation: %w", err)
	}
	toFrontend, err := mk(infoToFrontend)
	if err != nil {
		return nil, fmt.Errorf("stripe: key derivation: %w", err)
	}
	if frontend {
		return &linkKeys{send: toMover, recv: toFrontend}, nil
	}
	return &linkKeys{send: toFrontend, recv: toMover}, nil
}

func gcmNonce(seq uint64) []byte {
	var n [12]byte
	binary.BigEndian.PutUint64(n[4:], seq)
	return n[:]
}

// seal appends m's sealed frame to b and advances the sequence.
func (s *sealer) seal(b []byte, m *Msg) ([]byte, error) {
	plain, err := AppendFrame(nil, m)
	if err != nil {
		return b, err
	}
	plain = plain[headerSize-1:] // keep the type byte, drop the length
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, uint32(8+len(plain)+s.aead.Overhead()))
	b = binary.BigEndian.AppendUint64(b, s.seq)
	var ad [sealedHeaderSize]byte
	copy(ad[:], b[start:])
	b = s.aead.Seal(b, gcmNonce(s.seq), plain, ad[:])
	s.seq++
	return b, nil
}

// parseSealedHeader returns the length of what follows the 4-byte length
// field (sequence number and ciphertext).
func parseSealedHeader(h []byte) (int, error) {
	if len(h) < 4 {
		return 0, errors.New("stripe: short frame header")
	}
	l := binary.BigEndian.Uint32(h)
	if l < 8+1+16 || l > maxSealed {
		return 0, fmt.Errorf("%w: its length %d is out of bounds", ErrTampered, l)
	}
	return int(l), nil
}

// open checks and decrypts one whole sealed frame (header included) and
// advances the sequence. After an error the link must be dropped.
func (s *sealer) open(frame []byte) (*Msg, error) {
	if len(frame) < sealedHeaderSize {
		return nil, errors.New("stripe: short sealed frame")
	}
	l, err := parseSealedHeader(frame)
	if err != nil {
		return nil, err
	}
	if len(frame) != 4+l {
		return nil, errors.New("stripe: sealed frame length mismatch")
	}
	if seq := binary.BigEndian.Uint64(frame[4:]); seq != s.seq {
		return nil, fmt.Errorf("%w: got frame %d, want %d", ErrReplay, seq, s.seq)
	}
	plain, err := s.aead.Open(nil, gcmNonce(s.seq), frame[sealedHeaderSize:], frame[:sealedHeaderSize])
	if err != nil {
		return nil, fmt.Errorf("%w: frame %d", ErrTampered, s.seq)
	}
	s.seq++
	t := Type(plain[0])
	if t == 0 || t >= typeEnd {
		return nil, fmt.Errorf("stripe: unknown message type %d", plain[0])
	}
	return ParseBody(t, plain[1:])
}
