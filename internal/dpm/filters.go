package dpm

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/ferrygrid/ferry/internal/checksum"
)

func init() {
	Register(&Module{Name: "gzip", Encode: gzipEncode, Decode: gzipDecode})
	Register(&Module{Name: "zstd", Encode: zstdEncode, Decode: zstdDecode})
	Register(&Module{Name: "cksum", Encode: cksumEncode, Decode: cksumDecode})
}

// level parses a compression level parameter: "", "N" or "level=N",
// within [lo, hi]; def when empty.
func level(params string, lo, hi, def int) (int, error) {
	v := strings.TrimPrefix(strings.TrimSpace(params), "level=")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: level %q (want %d to %d)", ErrSyntax, params, lo, hi)
	}
	return n, nil
}

func gzipEncode(_ context.Context, env Env, dst io.Writer, src io.Reader) error {
	lv, err := level(env.Params, gzip.HuffmanOnly, gzip.BestCompression, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(dst, lv)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if _, err := io.Copy(zw, src); err != nil {
		return err
	}
	return zw.Close()
}

func gzipDecode(_ context.Context, _ Env, dst io.Writer, src io.Reader) error {
	zr, err := gzip.NewReader(src)
	if err != nil {
		return fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
	}
	defer zr.Close()
	if _, err := io.Copy(dst, zr); err != nil {
		return corrupt("gzip", err)
	}
	return nil
}

// corrupt marks a decoder's error as bad data, unless it came from
// writing (a closed pipe).
func corrupt(what string, err error) error {
	if err == io.ErrClosedPipe {
		return err
	}
	return fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
}

func zstdEncode(_ context.Context, env Env, dst io.Writer, src io.Reader) error {
	lv, err := level(env.Params, 1, 22, 3)
	if err != nil {
		return err
	}
	zw, err := zstd.NewWriter(dst, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(lv)), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	if _, err := io.Copy(zw, src); err != nil {
		zw.Close()
		return err
	}
	return zw.Close()
}

// zstdMaxWindow bounds the memory a zstd frame's window may ask of ESTO.
const zstdMaxWindow = 128 << 20

func zstdDecode(_ context.Context, _ Env, dst io.Writer, src io.Reader) (err error) {
	// The decoder takes an empty stream for zero frames, a clean end;
	// a zstd stream has one frame at least (even of no data), as a gzip
	// one has a member, so nothing at all is data that never came.
	cr := &countingReader{r: src}
	src = cr
	defer func() {
		if err == nil && cr.n == 0 {
			err = fmt.Errorf("%w: zstd: no frame: the data is empty", ErrCorrupt)
		}
	}()
	zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecoderMaxMemory(zstdMaxWindow))
	if err != nil {
		return err
	}
	defer zr.Close()
	if _, err := io.Copy(dst, zr); err != nil {
		return corrupt("zstd", err)
	}
	return nil
}

// cksum: the data followed by the lowercase hex checksum of it (params:
// a CKSM algorithm, default SHA256). ESTO checks and strips it.

func cksumAlg(params string) (string, error) {
	alg := strings.TrimSpace(params)
	if alg == "" {
		alg = "SHA256"
	}
	if _, err := checksum.New(alg); err != nil {
		return "", fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return alg, nil
}

func cksumEncode(_ context.Context, env Env, dst io.Writer, src io.Reader) error {
	alg, err := cksumAlg(env.Params)
	if err != nil {
		return err
	}
	h, _ := checksum.New(alg)
	if _, err := io.Copy(io.MultiWriter(dst, h), src); err != nil {
		return err
	}
	_, err = io.WriteString(dst, hex.EncodeToString(h.Sum(nil)))
	return err
}

func cksumDecode(_ context.Context, env Env, dst io.Writer, src io.Reader) error {
	alg, err := cksumAlg(env.Params)
	if err != nil {
		return err
	}
	h, _ := checksum.New(alg)
	tail := 2 * h.Size() // the trailer, held back until the end
	buf := make([]byte, 0, 64<<10+tail)
	for {
		n, rerr := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if out := len(buf) - tail; out > 0 {
			h.Write(buf[:out])
			if _, err := dst.Write(buf[:out]); err != nil {
				return err
			}
			buf = buf[:copy(buf, buf[out:])]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if len(buf) != tail {
		return fmt.Errorf("%w: cksum: the data is shorter than its %s trailer", ErrCorrupt, alg)
	}
	if want := hex.EncodeToString(h.Sum(nil)); string(buf) != want {
		return fmt.Errorf("%w: cksum: %s of the data is %s, the trailer says %q", ErrCorrupt, alg, want, buf)
	}
	return nil
}
