package netopt

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/tcppair"
)

func TestReadTCPStats(t *testing.T) {
	c, s := tcppair.New(t)
	const size = 1 << 20
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(make([]byte, size))
		werr <- err
	}()
	if _, err := io.ReadFull(s, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	for name, conn := range map[string]net.Conn{"sender": c, "receiver": s} {
		st, ok := ReadTCPStats(conn)
		if !ok {
			t.Fatalf("%s: no TCP_INFO", name)
		}
		if st.RTT <= 0 || st.MSS <= 0 || st.Cwnd <= 0 || st.SndBuf <= 0 || st.RcvBuf <= 0 || st.SegsIn <= 0 || st.SegsOut <= 0 {
			t.Errorf("%s: implausible %+v", name, st)
		}
		if st.MinRTT > st.RTT*100 {
			t.Errorf("%s: MinRTT %v against RTT %v", name, st.MinRTT, st.RTT)
		}
	}
	// The receiver's own estimate of the round trip is what follows a
	// connection that only receives (the re-tuning's queue check).
	if st, _ := ReadTCPStats(s); st.RcvRTT <= 0 || st.RcvRTT > time.Second || st.RcvOOO != 0 || st.SegsIn == 0 {
		t.Errorf("receiver: RcvRTT %v, %d segments in, %d out of order, after %d bytes over loopback", st.RcvRTT, st.SegsIn, st.RcvOOO, size)
	}
	if _, ok := ReadTCPStats(tls.Client(s, &tls.Config{})); ok {
		t.Error("a TLS connection gave TCP_INFO without unwrapping")
	}
	s.Close()
	if _, ok := ReadTCPStats(s); ok {
		t.Error("a closed connection gave TCP_INFO")
	}
}
