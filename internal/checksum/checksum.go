// Package checksum implements the checksum algorithms of the GridFTP CKSM
// command (GCT's extension; FEAT line "CKSM MD5:10;ADLER32:10;…").
//
// Results are lowercase hexadecimal. The 32-bit checksums (ADLER32,
// CRC32C) are the big-endian bytes of the value, so always 8 digits.
package checksum

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"sync"
)

// ErrUnknownAlgorithm is returned for an algorithm name not in [Names].
var ErrUnknownAlgorithm = errors.New("unknown checksum algorithm")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// algorithms in FEAT order, with GCT-style priorities (lower is preferred).
var algorithms = []struct {
	name     string
	priority int
	new      func() hash.Hash
}{
	{"MD5", 10, md5.New},
	{"ADLER32", 10, func() hash.Hash { return adler32.New() }},
	{"SHA1", 10, sha1.New},
	{"SHA256", 11, sha256.New},
	{"SHA512", 12, sha512.New},
	{"CRC32C", 13, func() hash.Hash { return crc32.New(castagnoli) }},
}

// New returns a fresh hash for a CKSM algorithm name (case-insensitive):
// MD5, ADLER32, SHA1, SHA256, SHA512 or CRC32C (Castagnoli). An unknown
// name gives an error wrapping [ErrUnknownAlgorithm].
func New(alg string) (hash.Hash, error) {
	for _, a := range algorithms {
		if strings.EqualFold(a.name, alg) {
			return a.new(), nil
		}
	}
	return nil, fmt.Errorf("%w %q (want %s)", ErrUnknownAlgorithm, alg, strings.Join(Names(), ", "))
}

// Names lists the supported algorithm names in the order of the FEAT CKSM
// line.
func Names() []string {
	names := make([]string, len(algorithms))
	for i, a := range algorithms {
		names[i] = a.name
	}
	return names
}

// Feature returns the body of the FEAT CKSM line,
// "MD5:10;ADLER32:10;SHA1:10;SHA256:11;SHA512:12;CRC32C:13;": each name
// with its priority, in GCT's style.
func Feature() string {
	var b strings.Builder
	for _, a := range algorithms {
		b.WriteString(a.name)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(a.priority))
		b.WriteByte(';')
	}
	return b.String()
}

// bufSize is the size of the pooled read buffers.
const bufSize = 1 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// Compute returns the checksum, in lowercase hex, of length bytes of r
// starting at off (length < 0: to the end), where size is r's size. A range
// passing the end is cut at the end, so an offset at or past the end gives
// the checksum of empty input. ctx is checked between chunks. A negative
// off is an error, as is r ending before size (io.ErrUnexpectedEOF).
func Compute(ctx context.Context, r io.ReaderAt, size, off, length int64, alg string) (string, error) {
	h, err := New(alg)
	if err != nil {
		return "", err
	}
	if off < 0 {
		return "", fmt.Errorf("checksum: negative offset %d", off)
	}
	end := size
	if off >= size {
		end = off
	} else if length >= 0 && length < size-off {
		end = off + length
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for pos := off; pos < end; {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		chunk := min(int64(len(buf)), end-pos)
		n, err := r.ReadAt(buf[:chunk], pos)
		h.Write(buf[:n])
		pos += int64(n)
		if int64(n) == chunk {
			continue
		}
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", fmt.Errorf("checksum: read at %d: %w", pos, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
