package client

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ferrygrid/ferry/internal/wire"
)

// TestParseSPASForms: a striped passive reply parses the same whether
// its address lines carry one leading space (GCT, GFD.020's examples,
// and Ferry's server), two (older Ferry servers) or none, in PORT form
// and in the EPRT form of "SPAS 2" (protocol.md §3.1).
func TestParseSPASForms(t *testing.T) {
	want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:54053"), netip.MustParseAddrPort("127.0.0.2:4000")}
	for _, raw := range []string{
		"229-Entering Striped Passive Mode.\r\n 127,0,0,1,211,37\r\n 127,0,0,2,15,160\r\n229 End\r\n",
		"229-Entering Striped Passive Mode.\r\n  127,0,0,1,211,37\r\n  127,0,0,2,15,160\r\n229 End\r\n",
		"229-Entering Striped Passive Mode.\r\n127,0,0,1,211,37\r\n127,0,0,2,15,160\r\n229 End\r\n",
		"229-Entering Striped Passive Mode.\r\n |1|127.0.0.1|54053|\r\n |1|127.0.0.2|4000|\r\n229 End\r\n",
		"229-Entering Striped Passive Mode.\r\n  |1|127.0.0.1|54053|\r\n  |1|127.0.0.2|4000|\r\n229 End\r\n",
	} {
		r, err := wire.NewReplyReader(strings.NewReader(raw)).ReadReply()
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		got, err := parseSPAS(r)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", raw, got, err, want)
		}
	}
	for _, raw := range []string{
		"229-Entering Striped Passive Mode.\r\n229 End\r\n",
		"229-Entering Striped Passive Mode.\r\n 127,0,0,1,211\r\n229 End\r\n",
	} {
		r, err := wire.NewReplyReader(strings.NewReader(raw)).ReadReply()
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got, err := parseSPAS(r); err == nil {
			t.Errorf("%q: %v, want an error", raw, got)
		}
	}
}
