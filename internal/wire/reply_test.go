package wire

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestReplyAppendWire(t *testing.T) {
	tests := []struct {
		r    Reply
		want string
	}{
		{Reply{200, []string{"NOOP command successful."}}, "200 NOOP command successful.\r\n"},
		{Reply{221, nil}, "221 \r\n"},
		{Reply{230, []string{""}}, "230 \r\n"},
		{Reply{211, []string{"Extensions supported", "MDTM", "SIZE", "End."}},
			"211-Extensions supported\r\n MDTM\r\n SIZE\r\n211 End.\r\n"},
		{Reply{229, []string{"Entering Striped Passive Mode.", "127,0,0,1,169,91", "End"}},
			"229-Entering Striped Passive Mode.\r\n 127,0,0,1,169,91\r\n229 End\r\n"},
		{Reply{550, []string{"/a\r\n250 fake: no such file"}}, "550 /a  250 fake: no such file\r\n"},
		{Reply{250, []string{"a", "250 injected", "End."}}, "250-a\r\n 250 injected\r\n250 End.\r\n"},
		{Reply{250, []string{"first\n", "End"}}, "250-first \r\n250 End\r\n"},
		// A 0xFF byte (in a file name) is Telnet's IAC: doubled.
		{Reply{257, []string{"\"/d\xff0\" created"}}, "257 \"/d\xff\xff0\" created\r\n"},
		// Other control characters from a peer (a path, an argument) are
		// written visibly, never raw; UTF-8 names are kept (RFC 2640).
		{Reply{550, []string{"a\x00b: No such file or directory."}}, "550 a\\x00b: No such file or directory.\r\n"},
		{Reply{550, []string{"\x1b[2Jx\x7f\x08\t"}}, "550 \\x1b[2Jx\\x7f\\x08\\x09\r\n"},
		{Reply{550, []string{"a\u009b31mb"}}, "550 a\\u009b31mb\r\n"},
		{Reply{257, []string{"\"/données/日本/ü\u00a0\" created"}}, "257 \"/données/日本/ü\u00a0\" created\r\n"},
		{Reply{211, []string{"x\x00", " \x01 ", "End"}}, "211-x\\x00\r\n  \\x01 \r\n211 End\r\n"},
	}
	for _, tt := range tests {
		if got := string(tt.r.AppendWire(nil)); got != tt.want {
			t.Errorf("AppendWire(%#v) = %q, want %q", tt.r, got, tt.want)
		}
		// Whatever we write, we read back as one reply.
		got, err := NewReplyReader(strings.NewReader(tt.want)).ReadReply()
		if err != nil || got.Code != tt.r.Code {
			t.Errorf("re-read %q = %#v, %v", tt.want, got, err)
		}
		if tt.r.Code == 257 && (len(got.Lines) != 1 || got.Lines[0] != tt.r.Lines[0]) {
			t.Errorf("re-read %q = %q, want %q", tt.want, got.Lines, tt.r.Lines)
		}
	}
}

func TestReplyTextClassError(t *testing.T) {
	r := Reply{550, []string{"GlobusError: v=1 c=PATH_NOT_FOUND", "GridFTP-Errno: 2", "End."}}
	if r.Text() != "GlobusError: v=1 c=PATH_NOT_FOUND\nGridFTP-Errno: 2\nEnd." {
		t.Errorf("Text = %q", r.Text())
	}
	if r.Class() != 5 {
		t.Errorf("Class = %d", r.Class())
	}
	var err error = &ReplyError{Reply: r}
	if want := "ftp: 550 GlobusError: v=1 c=PATH_NOT_FOUND; GridFTP-Errno: 2; End."; err.Error() != want {
		t.Errorf("Error = %q, want %q", err.Error(), want)
	}
	var re *ReplyError
	if !errors.As(err, &re) || re.Reply.Code != 550 {
		t.Errorf("errors.As failed")
	}
	if got := (&ReplyError{Reply{421, []string{"Timeout."}}}).Error(); got != "ftp: 421 Timeout." {
		t.Errorf("Error = %q", got)
	}
}

func TestReadReply(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Reply
		last error
	}{
		{"banner", "220 host GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready.\r\n",
			[]Reply{{220, []string{"host GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready."}}}, io.EOF},
		{"gct broken 501 then next reply",
			"501 'TYPE E\r\n' unrecognized type.\r\n200 Type set to I.\r\n",
			[]Reply{{501, []string{"'TYPE E"}}, {200, []string{"Type set to I."}}}, io.EOF},
		{"perf marker then 226",
			"112-Perf Marker\r\n Timestamp:  1795289848.1\r\n Stripe Index: 0\r\n Stripe Bytes Transferred: 201326592\r\n Total Stripe Count: 1\r\n112 End.\r\n226 Transfer Complete.\r\n",
			[]Reply{
				{112, []string{"Perf Marker", "Timestamp:  1795289848.1", "Stripe Index: 0",
					"Stripe Bytes Transferred: 201326592", "Total Stripe Count: 1", "End."}},
				{226, []string{"Transfer Complete."}},
			}, io.EOF},
		{"range marker", "111 Range Marker 0-16777216\r\n",
			[]Reply{{111, []string{"Range Marker 0-16777216"}}}, io.EOF},
		{"storage error with ddd- lines",
			"550-GlobusError: v=1 c=PATH_NOT_FOUND\r\n550-GridFTP-Errno: 2\r\n550-GridFTP-Reason: System error in stat\r\n550-GridFTP-Error-String: No such file or directory\r\n550 End.\r\n",
			[]Reply{{550, []string{"GlobusError: v=1 c=PATH_NOT_FOUND", "GridFTP-Errno: 2",
				"GridFTP-Reason: System error in stat", "GridFTP-Error-String: No such file or directory", "End."}}}, io.EOF},
		{"mlst",
			"250-status of /scratch/labdata/tree/a.txt\r\n Type=file;Modify=20261121193718;Size=2; /scratch/labdata/tree/a.txt\r\n250 End.\r\n",
			[]Reply{{250, []string{"status of /scratch/labdata/tree/a.txt",
				"Type=file;Modify=20261121193718;Size=2; /scratch/labdata/tree/a.txt", "End."}}}, io.EOF},
		{"spas", "229-Entering Striped Passive Mode.\r\n 127,0,0,1,169,91\r\n229 End\r\n",
			[]Reply{{229, []string{"Entering Striped Passive Mode.", "127,0,0,1,169,91", "End"}}}, io.EOF},
		{"bare code", "200\r\n", []Reply{{200, []string{""}}}, io.EOF},
		{"multi closed by bare code", "211-a\r\n b\r\n211\r\n", []Reply{{211, []string{"a", "b", ""}}}, io.EOF},
		{"other code inside multi", "214-Help\r\n200 not the end\r\n214 End\r\n",
			[]Reply{{214, []string{"Help", "200 not the end", "End"}}}, io.EOF},
		{"ddd-dash of same code not end", "250-a\r\n250-b\r\n250 c\r\n", []Reply{{250, []string{"a", "b", "c"}}}, io.EOF},
		{"lf only", "200 ok\n", []Reply{{200, []string{"ok"}}}, io.EOF},
		{"garbage only", "hello\r\n", nil, io.ErrUnexpectedEOF},
		{"eof inside multi", "211-a\r\n b\r\n", nil, io.ErrUnexpectedEOF},
		{"2000 is not a start", "2000 x\r\n200 y\r\n", []Reply{{200, []string{"y"}}}, io.EOF},
		{"bad code", "099 x\r\n", nil, ErrBadReply},
		{"600", "600 x\r\n", nil, ErrBadReply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr := NewReplyReader(strings.NewReader(tt.in))
			var got []Reply
			var err error
			for {
				var r Reply
				r, err = rr.ReadReply()
				if err != nil {
					break
				}
				got = append(got, r)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("replies = %#v, want %#v", got, tt.want)
			}
			if !errors.Is(err, tt.last) {
				t.Errorf("final error = %v, want %v", err, tt.last)
			}
		})
	}
}

func TestReadReplyBounds(t *testing.T) {
	// Too many lines: 1,000,001 tiny middle lines.
	var b strings.Builder
	b.WriteString("211-x\r\n")
	for i := 0; i < maxReplyLines; i++ {
		b.WriteString("\n")
	}
	b.WriteString("211 End\r\n")
	if _, err := NewReplyReader(strings.NewReader(b.String())).ReadReply(); !errors.Is(err, ErrReplyTooLong) {
		t.Errorf("too many lines: err = %v", err)
	}
	// Too many bytes: 300 lines of 60 KiB.
	line := " " + strings.Repeat("y", 60<<10) + "\r\n"
	in := "211-x\r\n" + strings.Repeat(line, 300) + "211 End\r\n"
	if _, err := NewReplyReader(strings.NewReader(in)).ReadReply(); !errors.Is(err, ErrReplyTooLong) {
		t.Errorf("too many bytes: err = %v", err)
	}
	// An over-long line.
	in = "200 " + strings.Repeat("z", 70<<10) + "\r\n"
	if _, err := NewReplyReader(strings.NewReader(in)).ReadReply(); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("long line: err = %v", err)
	}
}

func FuzzReplyReader(f *testing.F) {
	f.Add("501 'TYPE E\r\n' unrecognized type.\r\n200 ok\r\n")
	f.Add("112-Perf Marker\r\n Timestamp:  1795289848.1\r\n112 End.\r\n")
	f.Add("550-a\r\n550-b\r\n550 End.\r\n")
	f.Add("200\r\n211-\n211\n")
	f.Fuzz(func(t *testing.T, in string) {
		rr := NewReplyReader(strings.NewReader(in))
		for n := 0; n <= len(in); n++ {
			r, err := rr.ReadReply()
			if err != nil {
				return
			}
			if r.Code < 100 || r.Code > 599 || len(r.Lines) == 0 {
				t.Fatalf("bad reply %#v", r)
			}
			// Writing the reply and reading it back is lossless for the
			// code and the number of lines, and for text without control
			// characters; the wire form holds none but the CRLFs.
			wire := r.AppendWire(nil)
			if n := strings.Count(string(wire), "\r\n"); n != len(r.Lines) || hasControl(strings.ReplaceAll(string(wire), "\r\n", "")) {
				t.Fatalf("wire form %q of %#v holds a control character", wire, r)
			}
			r2, err := NewReplyReader(strings.NewReader(string(wire))).ReadReply()
			if err != nil || r2.Code != r.Code || len(r2.Lines) != len(r.Lines) {
				t.Fatalf("round trip of %#v via %q = %#v, %v", r, wire, r2, err)
			}
			for i := range r.Lines {
				if !hasControl(r.Lines[i]) && r2.Lines[i] != r.Lines[i] {
					t.Fatalf("line %d: %q became %q", i, r.Lines[i], r2.Lines[i])
				}
			}
		}
	})
}

// hasControl reports whether s holds a C0 control, DEL or a UTF-8 C1
// control (U+0080..U+009F).
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f {
			return true
		}
	}
	return false
}
