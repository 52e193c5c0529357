package chaos

import "testing"

// TestSniffedPort: the sniffer learns the data port of PASV and EPSV
// replies and of PORT and EPRT commands, and of nothing else.
func TestSniffedPort(t *testing.T) {
	for _, c := range []struct {
		line string
		port int // 0: none
	}{
		{"227 Entering Passive Mode (127,0,0,1,204,21)\r\n", 204<<8 | 21},
		{"229 Entering Extended Passive Mode (|||56331|)\r\n", 56331},
		{"PORT 127,0,0,1,4,1\r\n", 4<<8 | 1},
		{"eprt |1|127.0.0.1|37469|\r\n", 37469},
		{"EPRT |2|::1|5000|\r\n", 5000},
		{"227-not final (127,0,0,1,204,21)\r\n", 0},
		{"200 PORT command successful\r\n", 0},
		{"STOR /x\r\n", 0},
		{"", 0},
	} {
		p, ok := sniffedPort(c.line)
		if ok != (c.port != 0) || p != c.port {
			t.Errorf("sniffedPort(%q) = %d, %v; want %d", c.line, p, ok, c.port)
		}
	}
}
