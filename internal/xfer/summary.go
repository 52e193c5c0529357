package xfer

import (
	"net/netip"
	"time"
)

// Summary describes one file transfer of a server session, for accounting
// and metrics: what GCT's transfer log ("Transfer stats", -log-transfer)
// records of a transfer, plus the certificate identity, the checksum and the
// TCP retransmissions. The PI fills it in; observers must not keep it past
// the call they receive it in, nor change it.
type Summary struct {
	// Op is the command: RETR, ERET, STOR, APPE or ESTO.
	Op string
	// Upload is true for data received (STOR, APPE, ESTO).
	Upload bool
	// Mode and Type are the transfer's MODE and TYPE.
	Mode Mode
	Type Type
	// Path is the file's path in the server's storage view of the user (a
	// client path made absolute).
	Path string
	// User is the account name; DN the certificate identity it logged in
	// with, "" for none.
	User, DN string
	// Client is the control connection's peer.
	Client netip.AddrPort
	// Start is when the command began; End when it ended, zero while the
	// transfer runs.
	Start, End time.Time
	// Bytes is the data moved (file bytes, before any framing).
	Bytes int64
	// Streams is the number of data connections the transfer used, over
	// Stripes stripes; 0 when the data mover does not say (striped servers
	// report only the stripes).
	Streams, Stripes int
	// Opened is how many of the Streams were opened for this transfer (the
	// others were cached from the previous one, MODE E).
	Opened int
	// Buffer is the TCP buffer size asked for with SBUF; 0 means the
	// kernel's automatic tuning.
	Buffer int
	// BlockSize is the MODE E block size the sender uses; 0 in stream mode.
	BlockSize int
	// Code is the final reply code (226 on success); 0 while running.
	Code int
	// Checksum is "ALGORITHM:value" of a download whose file the session
	// checksummed whole (CKSM) before it, with no upload to the file
	// since; else "". None is computed for it, and an upload has none:
	// the checksum a client asks for after an upload comes too late.
	Checksum string
	// Retransmits counts the TCP segments the data connections
	// retransmitted during the transfer (Linux TCP_INFO), -1 when unknown.
	Retransmits int64
}

// Duration is how long the transfer took (0 while it runs).
func (s *Summary) Duration() time.Duration {
	if s.End.IsZero() {
		return 0
	}
	return s.End.Sub(s.Start)
}

// Rate is the average rate in bytes per second (0 while it runs, or for an
// instant transfer).
func (s *Summary) Rate() float64 {
	d := s.Duration()
	if d <= 0 {
		return 0
	}
	return float64(s.Bytes) / d.Seconds()
}
