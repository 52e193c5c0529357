// Package translog writes a server's accounting log: one JSON line per
// transfer, with the fields of GCT's transfer log (globus-gridftp-server
// -log-transfer: start, end, user, file, bytes, streams, stripes, TCP
// buffer, block size, transfer type, reply code, remote host) and Ferry's
// (certificate DN, checksum, rate, TCP retransmissions):
//
//	{"start":"2026-11-27T16:50:01.123456Z","end":"2026-11-27T16:50:03.5Z","host":"dtn1","user":"alice",
//	 "dn":"/DC=org/DC=example/CN=Alice","file":"/data/run1.h5","type":"RETR","mode":"eblock","bytes":1073741824,
//	 "streams":4,"stripes":1,"buffer":0,"block":1048576,"code":226,"remote":"192.0.2.7",
//	 "duration":2.377,"rate":451722457,"retransmits":12,"checksum":"MD5:0f343b0931126a20f133d67c2b018a3b"}
//
// (one line in the file). A Log writes each line with a single write
// under a lock, to a file opened with O_APPEND, so lines never interleave;
// Reopen (on SIGHUP) opens the file by its name again, so that a log
// renamed away by a rotation loses no line: lines go to the old file until
// the new one is open, then to the new one.
package translog

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// Record is one line of the log.
type Record struct {
	Start time.Time `json:"start"` // the command began (GCT START)
	End   time.Time `json:"end"`   // the transfer ended (GCT DATE)
	Host  string    `json:"host"`  // this server's host name (GCT HOST)
	User  string    `json:"user"`  // the account (GCT USER)
	DN    string    `json:"dn,omitempty"`
	File  string    `json:"file"` // the path in the user's view (GCT FILE)
	Type  string    `json:"type"` // RETR, ERET, STOR, APPE or ESTO (GCT TYPE)
	Mode  string    `json:"mode"` // stream or eblock
	Bytes int64     `json:"bytes"`
	// Streams is the number of data connections (0: unknown), over
	// Stripes stripes.
	Streams int `json:"streams"`
	Stripes int `json:"stripes"`
	Buffer  int `json:"buffer"` // TCP buffer asked for (SBUF); 0: autotuning
	Block   int `json:"block"`  // MODE E block size; 0 in stream mode
	Code    int `json:"code"`   // the final reply code (GCT CODE)
	// Remote is the client's address (GCT DEST names the data peer, which
	// is the client's host unless the transfer is third-party).
	Remote   string  `json:"remote"`
	Duration float64 `json:"duration"` // seconds
	Rate     float64 `json:"rate"`     // bytes per second
	// Retransmits counts the TCP segments the data connections
	// retransmitted during the transfer; absent when unknown.
	Retransmits *int64 `json:"retransmits,omitempty"`
	// Checksum is "ALGORITHM:value" of a download whose file the session
	// checksummed whole (CKSM) before it (xfer.Summary.Checksum).
	Checksum string `json:"checksum,omitempty"`
}

// NewRecord is the record of an ended transfer t on host.
func NewRecord(host string, t *xfer.Summary) Record {
	r := Record{
		Start: t.Start.UTC(), End: t.End.UTC(), Host: host, User: t.User, DN: t.DN, File: t.Path,
		Type: t.Op, Mode: "stream", Bytes: t.Bytes, Streams: t.Streams, Stripes: t.Stripes,
		Buffer: t.Buffer, Block: t.BlockSize, Code: t.Code, Duration: t.Duration().Seconds(),
		Rate: float64(int64(t.Rate())), Checksum: t.Checksum,
	}
	if t.Mode == xfer.ModeEBlock {
		r.Mode = "eblock"
	}
	if t.Client.IsValid() {
		r.Remote = t.Client.Addr().Unmap().String()
	}
	if t.Retransmits >= 0 {
		n := t.Retransmits
		r.Retransmits = &n
	}
	return r
}

// Log is an accounting log. Its methods may be called concurrently.
type Log struct {
	path string // "" for a writer that cannot be reopened
	host string
	log  *slog.Logger

	mu      sync.Mutex
	w       io.Writer // guarded by mu
	f       *os.File  // guarded by mu; nil for a writer
	failing bool      // guarded by mu: the last write failed (logged once)
}

// Open opens (creates, mode 0640) the log file path for appending; "-"
// means w (standard output). log receives write errors; nil discards
// them.
//
// Whoever can write the log's directory must not make a server running
// as root append to another file, nor hang it: the last element of path
// is never followed when it is a symbolic link, the open does not wait
// (a FIFO is refused at once), and the file must be a regular file with
// one link, owned by the effective user (or root).
func Open(path string, w io.Writer, log *slog.Logger) (*Log, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	l := &Log{host: host, log: log, w: w}
	if path == "-" {
		return l, nil
	}
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	l.path, l.f, l.w = path, f, f
	return l, nil
}

// Transfer writes the line of t once it has ended (the server.Observer
// Transfer method); it ignores the call at its start.
func (l *Log) Transfer(t *xfer.Summary) {
	if t.End.IsZero() {
		return
	}
	line, err := json.Marshal(NewRecord(l.host, t))
	if err != nil {
		l.log.Error("transfer log: cannot encode a record", "err", err)
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(line)
	switch {
	case err != nil && !l.failing:
		l.failing = true
		l.log.Error("transfer log: write failed; lines are lost until it works again", "file", l.path, "err", err)
	case err == nil && l.failing:
		l.failing = false
		l.log.Info("transfer log: writing again", "file", l.path)
	}
}

// Reopen opens the log file by its name again (after a rotation renamed
// it) and closes the old one; lines written meanwhile go to the old file.
// A log on standard output has nothing to reopen. A path that is not a
// regular file of ours (see Open) is refused, and the old file kept
// open; Reopen never blocks on what it finds at the path.
func (l *Log) Reopen() error {
	if l.path == "" {
		return nil
	}
	f, err := openFile(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f, l.w = f, f
	l.mu.Unlock()
	return old.Close()
}

// Close closes the log file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.w = errWriter{}
	l.f = nil
	return err
}

// errWriter is the writer of a closed Log.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("translog: closed") }
