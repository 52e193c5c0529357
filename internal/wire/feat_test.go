package wire

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseFeatures(t *testing.T) {
	in := "211-Extensions supported\r\n CKSM MD5:10;ADLER32:10;SHA1:10;SHA256:11;SHA512:12;\r\n DSI file-13.24\r\n STORATTR\r\n" +
		" MLST Type*;Size*;Modify*;Perm*;Charset;UNIX.mode*;UNIX.owner*;UNIX.uid*;UNIX.group*;UNIX.gid*;Unique*;UNIX.slink*;X.count;\r\n" +
		" REST STREAM\r\n PASV AllowDelayed;\r\n parallel  \r\n \r\n211 End.\r\n"
	r, err := NewReplyReader(strings.NewReader(in)).ReadReply()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CKSM":     "MD5:10;ADLER32:10;SHA1:10;SHA256:11;SHA512:12;",
		"DSI":      "file-13.24",
		"STORATTR": "",
		"MLST":     "Type*;Size*;Modify*;Perm*;Charset;UNIX.mode*;UNIX.owner*;UNIX.uid*;UNIX.group*;UNIX.gid*;Unique*;UNIX.slink*;X.count;",
		"REST":     "STREAM",
		"PASV":     "AllowDelayed;",
		"PARALLEL": "",
	}
	if got := ParseFeatures(r); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseFeatures = %#v\nwant %#v", got, want)
	}
	for _, r := range []Reply{{211, []string{"No features"}}, {211, []string{"Extensions supported", "End"}}, {211, nil}} {
		if got := ParseFeatures(r); got == nil || len(got) != 0 {
			t.Errorf("ParseFeatures(%#v) = %#v, want empty map", r, got)
		}
	}
}
