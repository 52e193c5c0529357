package wire

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// readAll reads lines until an error and returns them with the final error.
func readAll(in string, max int) ([]string, []error) {
	lr := NewLineReader(strings.NewReader(in), max)
	var lines []string
	var errs []error
	for {
		l, err := lr.ReadLine()
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			errs = append(errs, err)
			return lines, errs
		}
		if err != nil {
			errs = append(errs, err)
			lines = append(lines, "<err>")
			continue
		}
		lines = append(lines, l)
	}
}

func TestLineReader(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		max   int
		lines []string
		last  error
	}{
		{"crlf", "NOOP\r\nQUIT\r\n", 100, []string{"NOOP", "QUIT"}, io.EOF},
		{"bare lf", "NOOP\nQUIT\n", 100, []string{"NOOP", "QUIT"}, io.EOF},
		{"empty lines", "\r\n\n", 100, []string{"", ""}, io.EOF},
		{"lone cr kept", "A\rB\r\n", 100, []string{"A\rB"}, io.EOF},
		{"cr cr lf", "x\r\r\n", 100, []string{"x\r"}, io.EOF},
		{"empty input", "", 100, nil, io.EOF},
		{"unterminated", "NOOP", 100, nil, io.ErrUnexpectedEOF},
		{"unterminated cr", "NOOP\r", 100, nil, io.ErrUnexpectedEOF},
		{"iac iac", "a\xff\xffb\r\n", 100, []string{"a\xffb"}, io.EOF},
		{"iac will", "a\xff\xfb\x01b\r\n", 100, []string{"ab"}, io.EOF},
		{"iac dont", "a\xff\xfe\x18b\r\n", 100, []string{"ab"}, io.EOF},
		{"iac ip dm abor", "\xff\xf4\xff\xf2ABOR\r\n", 100, []string{"ABOR"}, io.EOF},
		{"iac option is lf", "a\xff\xfd\nb\r\n", 100, []string{"ab"}, io.EOF},
		{"iac at eof", "a\xff", 100, nil, io.ErrUnexpectedEOF},
		{"iac will at eof", "\xff\xfb", 100, nil, io.ErrUnexpectedEOF},
		{"exactly max", "abcd\r\n", 4, []string{"abcd"}, io.EOF},
		{"max with cr", "abcd\r\nx\n", 4, []string{"abcd", "x"}, io.EOF},
		{"too long then ok", "abcde\r\nok\r\n", 4, []string{"<err>", "ok"}, io.EOF},
		{"iac escape counts", "abc\xff\xff\xff\xff\r\n", 4, []string{"<err>"}, io.EOF},
		{"too long unterminated", "abcdefgh", 4, nil, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, errs := readAll(tt.in, tt.max)
			if strings.Join(lines, "|") != strings.Join(tt.lines, "|") || len(lines) != len(tt.lines) {
				t.Errorf("lines = %q, want %q", lines, tt.lines)
			}
			if last := errs[len(errs)-1]; last != tt.last {
				t.Errorf("final error = %v, want %v", last, tt.last)
			}
		})
	}
}

func TestLineReaderTooLongIsSentinel(t *testing.T) {
	lr := NewLineReader(strings.NewReader(strings.Repeat("x", 1<<20)+"\r\nNOOP\r\n"), 512)
	if _, err := lr.ReadLine(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	if cap(lr.buf) > 4096 {
		t.Errorf("buffered %d bytes of an over-long line", cap(lr.buf))
	}
	if l, err := lr.ReadLine(); l != "NOOP" || err != nil {
		t.Fatalf("next line = %q, %v", l, err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestLineReaderPassesErrors(t *testing.T) {
	_, err := NewLineReader(errReader{}, 10).ReadLine()
	if err == nil || err.Error() != "boom" {
		t.Fatalf("err = %v", err)
	}
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("NOOP\r\nQUIT\n"), 16)
	f.Add([]byte("\xff\xf4\xff\xf2ABOR\r\n\xff\xff\r\n"), 4)
	f.Add([]byte("x\r\r\n\xff\xfb"), 1)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<16 {
			max = 1 + (max & 0xff)
		}
		lr := NewLineReader(strings.NewReader(string(in)), max)
		for n := 0; ; n++ {
			l, err := lr.ReadLine()
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return
			}
			if n > len(in) {
				t.Fatalf("more lines than input bytes")
			}
			if err != nil {
				if err != ErrLineTooLong {
					t.Fatalf("unexpected error %v", err)
				}
				continue
			}
			if len(l) > max {
				t.Fatalf("line of %d bytes exceeds max %d", len(l), max)
			}
			if strings.Contains(l, "\n") {
				t.Fatalf("line %q contains LF", l)
			}
		}
	})
}
