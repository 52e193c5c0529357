package netopt

import (
	"crypto/tls"
	"testing"

	"github.com/ferrygrid/ferry/internal/testutil/tcppair"
)

// TestReadRetransmits: the one-call read agrees with ReadTCPStats and
// refuses what it refuses.
func TestReadRetransmits(t *testing.T) {
	c, s := tcppair.New(t)
	n, ok := ReadRetransmits(c)
	st, ok2 := ReadTCPStats(c)
	if !ok || !ok2 || n != st.Retransmits || n < 0 {
		t.Errorf("ReadRetransmits %d, %v; ReadTCPStats %d, %v", n, ok, st.Retransmits, ok2)
	}
	if _, ok := ReadRetransmits(tls.Client(s, &tls.Config{})); ok {
		t.Error("a TLS connection gave TCP_INFO without unwrapping")
	}
	s.Close()
	if _, ok := ReadRetransmits(s); ok {
		t.Error("a closed connection gave TCP_INFO")
	}
}
