package dcsec

import (
	"bytes"
	"io"
	"testing"
)

// chunkReader returns the bytes of data in chunks whose sizes come from
// sizes, never more than asked.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(r.sizes) > 0 {
		n = min(n, int(r.sizes[r.i%len(r.sizes)])+1)
		r.i++
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// boundaries returns the offsets where TLS records (header, then body)
// start and end in stream, as a set.
func boundaries(stream []byte) map[int]bool {
	b := map[int]bool{0: true}
	for off := 0; off < len(stream); {
		if off+recordHeaderLen > len(stream) {
			break
		}
		n := int(stream[off+3])<<8 | int(stream[off+4])
		off += recordHeaderLen
		b[off] = true
		off += n
		b[off] = true
	}
	return b
}

// FuzzRecordReader: whatever the byte stream and however reads are sized,
// the reader returns the stream unchanged, takes from below only what it
// returns, and never returns bytes across a record header/body boundary.
func FuzzRecordReader(f *testing.F) {
	f.Add([]byte{23, 3, 3, 0, 1, '0', 'd', 'a', 't', 'a'}, []byte{0}, []byte{4})
	f.Add([]byte{22, 3, 1, 0, 0, 23, 3, 3, 0, 2, 1, 2, 9}, []byte{}, []byte{0, 200})
	f.Add([]byte{23, 3, 3, 0xff, 0xff}, []byte{7}, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, stream, chunks, reads []byte) {
		under := &chunkReader{data: stream, sizes: chunks}
		r := &recordReader{r: under}
		bounds := boundaries(stream)
		var got []byte
		for i := 0; ; i++ {
			size := 64
			if len(reads) > 0 {
				size = int(reads[i%len(reads)]) + 1
			}
			buf := make([]byte, size)
			n, err := r.Read(buf)
			if n < 0 || n > size {
				t.Fatalf("Read returned %d for a %d-byte buffer", n, size)
			}
			// No boundary strictly inside what one Read returned.
			for k := len(got) + 1; k < len(got)+n; k++ {
				if bounds[k] {
					t.Fatalf("Read of %d bytes at %d crosses the record boundary at %d", n, len(got), k)
				}
			}
			got = append(got, buf[:n]...)
			if consumed := len(stream) - len(under.data); consumed != len(got) {
				t.Fatalf("consumed %d bytes below, returned %d", consumed, len(got))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if i > 4*len(stream)+10 {
				t.Fatal("no progress")
			}
		}
		if !bytes.Equal(got, stream) {
			t.Fatalf("stream changed")
		}
	})
}
