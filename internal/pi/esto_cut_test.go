package pi_test

// An ESTO whose compressed data was cut right after a complete gzip
// member or zstd frame is not stored (finding 2 of the outside review of
// 2026-11-27): the decoder sees a clean end, but fewer bytes came than
// the client announced.

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// compressed is one gzip member or zstd frame per part, concatenated.
func compressed(t *testing.T, module string, parts ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, p := range parts {
		var err error
		switch module {
		case "gzip":
			zw := gzip.NewWriter(&b)
			zw.Write(p)
			err = zw.Close()
		case "zstd":
			var zw *zstd.Encoder
			if zw, err = zstd.NewWriter(&b); err == nil {
				zw.Write(p)
				err = zw.Close()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestModuleESTOCutAfterMember: the data of an ESTO gzip or zstd stops
// right after its first member or frame, in order (stream mode: the
// connection closed; MODE E: EOF and EODs), short of the bytes the client
// announced with ALLO: refused with 426, and the old file stays. The whole
// stream is stored, and so is one whose ALLO is the decoded size (GCT's
// -smn/-dmn copies), shorter than the data.
func TestModuleESTOCutAfterMember(t *testing.T) {
	one, two := bytes.Repeat([]byte("first member; "), 5000), bytes.Repeat([]byte("second; "), 3000)
	want := append(append([]byte{}, one...), two...)
	for _, module := range []string{"gzip", "zstd"} {
		for _, modeE := range []bool{false, true} {
			name := fmt.Sprintf("%s/modeE=%v", module, modeE)
			c := moduleServer(t, module)
			if r := c.stor("STOR", "/f", []byte("the old file")); r.Code != 226 {
				t.Fatalf("STOR: %v", r)
			}
			if modeE {
				c.expect("MODE E", 200)
			}
			esto := func(data []byte) int {
				t.Helper()
				cmd := fmt.Sprintf(`ESTO %s="" /f`, module)
				if !modeE {
					return c.stor("ESTO", cmd[len("ESTO "):], data).Code
				}
				prelim, rest := c.modeEStore(cmd, data, 2, nil)
				if prelim.Class() != 1 {
					return prelim.Code
				}
				return rest[len(rest)-1].Code
			}
			retr := func() []byte {
				t.Helper()
				if modeE {
					got, r := c.modeERetrieve("RETR /f", 1)
					if r.Code != 226 {
						t.Fatalf("%s: RETR: %v", name, r)
					}
					return got
				}
				got, r := c.retr("/f")
				if r.Code != 226 {
					t.Fatalf("%s: RETR: %v", name, r)
				}
				return got
			}
			whole := compressed(t, module, one, two)
			cut := compressed(t, module, one)

			c.expect(fmt.Sprintf("ALLO %d", len(whole)), 200)
			if code := esto(cut); code != 426 && code != 451 {
				t.Errorf("%s: ESTO cut after the first member, ALLO of the whole: %d; want 426 or 451", name, code)
			}
			if got := retr(); string(got) != "the old file" {
				t.Errorf("%s: a refused ESTO left %d bytes at /f", name, len(got))
			}

			c.expect(fmt.Sprintf("ALLO %d", len(whole)), 200)
			if code := esto(whole); code != 226 {
				t.Fatalf("%s: ESTO of the whole stream: %d", name, code)
			}
			if got := retr(); !bytes.Equal(got, want) {
				t.Errorf("%s: stored %d bytes, want %d", name, len(got), len(want))
			}

			// ALLO of the decoded size, larger than the data.
			c.expect(fmt.Sprintf("ALLO %d", len(want)), 200)
			if code := esto(compressed(t, module, two, one)); code != 226 {
				t.Fatalf("%s: ESTO with ALLO of the decoded size: %d", name, code)
			}
			if got := retr(); !bytes.Equal(got, append(append([]byte{}, two...), one...)) {
				t.Errorf("%s: stored %d bytes", name, len(got))
			}
		}
	}
}
