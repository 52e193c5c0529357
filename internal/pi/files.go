package pi

// Namespace commands: everything that reads or changes file metadata over the
// control channel (RFC 959 §4.1.3, RFC 3659, GridFTP CKSM and SITE).

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// entryOf converts storage metadata to a listing entry, with the Perm fact
// seen from the logged-in account.
func (s *session) entryOf(fi dsi.FileInfo, name string) wire.Entry {
	e := wire.NewEntry(name)
	e.Type = typeFact(fi.Mode)
	e.Size = fi.Size
	e.Modify = fi.ModTime
	e.Mode = int(fi.Mode.Perm())
	e.Owner, e.Group = fi.Owner, fi.Group
	e.UID, e.GID = fi.UID, fi.GID
	e.Unique = fi.Unique
	e.Slink = fi.Link
	w := s.acct != nil && s.acct.Writable
	switch {
	case fi.IsDir() && w:
		e.Perm = "cdeflmp"
	case fi.IsDir():
		e.Perm = "el"
	case w:
		e.Perm = "adfrw"
	default:
		e.Perm = "r"
	}
	return e
}

// typeFact is the MLSx Type fact of an object of mode m. What is not a
// file, directory or link has an OS-specific type (RFC 3659 §7.5.1),
// "OS.unix=fifo" say, so that no client takes a FIFO, socket or device
// for a file it can download.
func typeFact(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "slink"
	case m&fs.ModeNamedPipe != 0:
		return wire.TypeFIFO
	case m&fs.ModeSocket != 0:
		return wire.TypeSocket
	case m&fs.ModeCharDevice != 0:
		return wire.TypeCharDevice
	case m&fs.ModeDevice != 0:
		return wire.TypeBlockDevice
	}
	return "file"
}

func cmdMLST(ctx context.Context, s *session, arg string) wire.Reply {
	p := s.abs(arg)
	fi, err := s.fs.Stat(ctx, p)
	if err != nil {
		return fsError(s, err, arg)
	}
	name := arg
	if name == "" {
		name = p
	}
	e := s.entryOf(fi, name)
	if fi.IsDir() && (arg == "" || arg == ".") {
		e.Type = "cdir"
	}
	line := string(wire.AppendFacts(nil, e, s.facts))
	return wire.Reply{Code: 250, Lines: []string{"status of " + name, line, "End."}}
}

func cmdSIZE(ctx context.Context, s *session, arg string) wire.Reply {
	fi, err := s.fs.Stat(ctx, s.abs(arg))
	if err != nil {
		return fsError(s, err, arg)
	}
	return ok(213, "%d", fi.Size)
}

func cmdMDTM(ctx context.Context, s *session, arg string) wire.Reply {
	fi, err := s.fs.Stat(ctx, s.abs(arg))
	if err != nil {
		return fsError(s, err, arg)
	}
	return ok(213, "%s", wire.FormatTime(fi.ModTime))
}

func cmdMFMT(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 2)
	if len(f) != 2 {
		return ok(501, "Invalid command arguments.")
	}
	t, err := wire.ParseTime(f[0])
	if err != nil {
		return ok(501, "Invalid command arguments.")
	}
	return s.setTime(ctx, t, f[1])
}

func (s *session) setTime(ctx context.Context, t time.Time, arg string) wire.Reply {
	ct, capable := s.fs.(dsi.Chtimeser)
	if !capable {
		return ok(502, "Setting times is not supported by this storage.")
	}
	if xfer.IsPartName(s.abs(arg)) {
		return partNameRefused(arg)
	}
	if err := ct.Chtimes(ctx, s.abs(arg), t); err != nil {
		return fsError(s, err, arg)
	}
	return ok(250, "OK.")
}

func cmdDELE(ctx context.Context, s *session, arg string) wire.Reply {
	if r := s.uploadBusy(ctx, s.abs(arg), arg); r.Code != 0 {
		return r
	}
	p := s.abs(arg)
	var keys []string
	if xfer.IsPartName(p) {
		keys = partKeys(s.uploadKeys(ctx, p, false).files)
	}
	if err := s.fs.Remove(ctx, p); err != nil {
		return fsError(s, err, arg)
	}
	// The ledger forgets a deleted part file (parts.go).
	s.parts().drop(keys)
	return ok(250, "OK.")
}

func cmdMKD(ctx context.Context, s *session, arg string) wire.Reply {
	p := s.abs(arg)
	if xfer.IsPartName(p) {
		return partNameRefused(arg)
	}
	if err := s.fs.Mkdir(ctx, p, 0o755); err != nil {
		return fsError(s, err, arg)
	}
	return ok(257, "Directory %s created successfully.", quotePath(p))
}

func cmdRMD(ctx context.Context, s *session, arg string) wire.Reply {
	if r := s.uploadBusy(ctx, s.abs(arg), arg); r.Code != 0 {
		return r
	}
	p := s.abs(arg)
	if err := s.fs.Rmdir(ctx, p); err != nil {
		return fsError(s, err, arg)
	}
	// The part files it held are gone: the ledger forgets them by path
	// (their other keys name the directory's identity, which is gone too).
	s.parts().dropUnder("p:" + strings.TrimSuffix(path.Join("/", s.acct.Home, p), "/") + "/")
	return ok(250, "OK.")
}

func cmdRNFR(ctx context.Context, s *session, arg string) wire.Reply {
	p := s.abs(arg)
	if xfer.IsPartName(p) {
		return partNameRefused(arg)
	}
	if r := s.uploadBusy(ctx, p, arg); r.Code != 0 {
		return r
	}
	if _, err := s.fs.Stat(ctx, p); err != nil {
		return fsError(s, err, arg)
	}
	s.renameFrom = p
	return ok(350, "OK. Send RNTO with destination name.")
}

func cmdRNTO(ctx context.Context, s *session, arg string) wire.Reply {
	from := s.renameFrom
	s.renameFrom = ""
	if from == "" {
		return ok(503, "Bad sequence of commands: send RNFR first.")
	}
	if xfer.IsPartName(s.abs(arg)) {
		return partNameRefused(arg)
	}
	// Checked again here: an upload may have begun since RNFR.
	for _, p := range []string{from, s.abs(arg)} {
		if r := s.uploadBusy(ctx, p, arg); r.Code != 0 {
			return r
		}
	}
	if err := s.fs.Rename(ctx, from, s.abs(arg)); err != nil {
		return fsError(s, err, arg)
	}
	return ok(250, "OK.")
}

// storeChecksummer is an optional Storage capability: the whole-file
// checksum the store keeps for an algorithm (a CKSM name, lowercase hex
// result), or an error (dsi.ErrNotSupported) when it keeps none.
type storeChecksummer interface {
	Checksum(ctx context.Context, name, alg string) (string, error)
}

// cmdCKSM: CKSM <alg> <offset> <length> <path>; length -1 means to the end.
func cmdCKSM(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 4)
	if len(f) != 4 {
		return ok(501, "Syntax error in parameters or arguments.")
	}
	off, err1 := strconv.ParseInt(f[1], 10, 64)
	length, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || off < 0 || length < -1 {
		return ok(501, "Syntax error in parameters or arguments.")
	}
	if _, err := checksum.New(f[0]); err != nil {
		return ok(504, "Unknown checksum algorithm requested.")
	}
	p := s.abs(f[3])
	if cs, isCS := s.fs.(storeChecksummer); isCS && off == 0 && length == -1 {
		// The store's own checksum, when it keeps one for alg (dsi/s3:
		// an ETag, an x-amz-checksum-*), spares reading the file.
		if sum, err := cs.Checksum(ctx, p, f[0]); err == nil {
			s.sum.path, s.sum.value = p, strings.ToUpper(f[0])+":"+sum
			return ok(213, "%s", sum)
		}
	}
	r, err := s.fs.Open(ctx, p)
	if err != nil {
		return fsError(s, err, f[3])
	}
	defer r.Close()
	var sum string
	err = s.runCancellable(ctx, func(ctx context.Context) error {
		var err error
		sum, err = checksum.Compute(ctx, r, r.Size(), off, length, f[0])
		return err
	})
	if err != nil {
		if errors.Is(err, xfer.ErrAborted) {
			return ok(426, "Checksum aborted.")
		}
		return fsError(s, err, f[3])
	}
	if off == 0 && length == -1 {
		s.sum.path, s.sum.value = p, strings.ToUpper(f[0])+":"+sum
	}
	return ok(213, "%s", sum)
}

// statPath answers STAT <path>: one ls -l line for the path itself.
func statPath(ctx context.Context, s *session, arg string) wire.Reply {
	p := s.abs(arg)
	fi, err := s.fs.Stat(ctx, p)
	if err != nil {
		return fsError(s, err, arg)
	}
	line := string(wire.AppendLIST(nil, s.entryOf(fi, arg), time.Now()))
	return wire.Reply{Code: 213, Lines: []string{"status of " + arg, line, "End."}}
}

// siteTable holds the SITE sub-commands (protocol.md §9.4–9.5).
var siteTable map[string]cmdSpec

func init() {
	siteTable = map[string]cmdSpec{
		"CHMOD":      {run: siteCHMOD, arg: argRequired, help: "SITE CHMOD <sp> mode <sp> pathname"},
		"UTIME":      {run: cmdMFMT /* MFMT's arguments */, arg: argRequired, help: "SITE UTIME <sp> YYYYMMDDHHMMSS <sp> pathname"},
		"HELP":       {run: func(context.Context, *session, string) wire.Reply { return siteHelp() }, public: true, help: "SITE HELP"},
		"VERSION":    {run: siteVERSION, public: true, arg: argNone, help: "SITE VERSION"},
		"WHOAMI":     {run: siteWHOAMI, arg: argNone, help: "SITE WHOAMI"},
		"CLIENTINFO": {run: siteOK, public: true, help: "SITE CLIENTINFO <sp> appname=\"<name>\";appver=\"<version>\";scheme=\"<scheme>\";"},
		"TASKID":     {run: siteOK, public: true, help: "SITE TASKID <sp> taskid"},
		"STRIPES":    {run: siteSTRIPES, arg: argNone, help: "SITE STRIPES: the data nodes of a striped server and their health"},
		"XFERSTATS":  {run: siteXFERSTATS, arg: argNone, help: "SITE XFERSTATS: what the data connections of the session's last transfer measured"},
	}
	// Every GCT spelling of the buffer-size command sets both buffers.
	for _, name := range []string{"SBUF", "RETRBUFSIZE", "RBUFSZ", "RBUFSIZ", "STORBUFSIZE", "SBUFSZ", "SBUFSIZ"} {
		siteTable[name] = cmdSpec{run: siteBUF, arg: argRequired, help: "SITE " + name + " <sp> bytes: set the TCP buffer size of data connections"}
	}
}

func cmdSITE(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 2)
	name := strings.ToUpper(f[0])
	spec, found := siteTable[name]
	if !found {
		return ok(500, "Invalid command.")
	}
	sub := ""
	if len(f) > 1 {
		sub = f[1]
	}
	switch {
	case !spec.public && s.acct == nil:
		return ok(530, "Please login with USER and PASS.")
	case spec.arg == argRequired && sub == "":
		return ok(501, "Syntax error in parameters or arguments.")
	case spec.arg == argNone && sub != "":
		return ok(501, "SITE %s takes no argument.", name)
	}
	return spec.run(ctx, s, sub)
}

func siteHelp() wire.Reply {
	names := make([]string, 0, len(siteTable))
	for n := range siteTable {
		names = append(names, n)
	}
	slices.Sort(names)
	lines := []string{"Help for SITE:"}
	for _, n := range names {
		lines = append(lines, siteTable[n].help)
	}
	return wire.Reply{Code: 214, Lines: append(lines, "End.")}
}

func siteOK(context.Context, *session, string) wire.Reply { return ok(250, "OK.") }

func siteBUF(ctx context.Context, s *session, arg string) wire.Reply { return s.setBuffer(arg) }

func siteVERSION(ctx context.Context, s *session, arg string) wire.Reply {
	return ok(200, "%s", s.cfg.Version)
}

func siteWHOAMI(ctx context.Context, s *session, arg string) wire.Reply {
	return ok(200, "%s", s.acct.Name)
}

func siteCHMOD(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 2)
	if len(f) != 2 {
		return ok(501, "Syntax error in parameters or arguments.")
	}
	mode, err := strconv.ParseUint(f[0], 8, 32)
	if err != nil || mode > 0o7777 {
		return ok(501, "Invalid mode %q: give octal permission bits such as 644.", f[0])
	}
	cm, capable := s.fs.(dsi.Chmoder)
	if !capable {
		return ok(502, "SITE CHMOD is not supported by this storage.")
	}
	if xfer.IsPartName(s.abs(f[1])) {
		return partNameRefused(f[1])
	}
	if err := cm.Chmod(ctx, s.abs(f[1]), fileMode(mode)); err != nil {
		return fsError(s, err, f[1])
	}
	return ok(250, "OK.")
}

// fileMode turns octal permission bits, with setuid/setgid/sticky, into an fs.FileMode.
func fileMode(m uint64) fs.FileMode {
	fm := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		fm |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		fm |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		fm |= fs.ModeSticky
	}
	return fm
}

// baseName is the name a listing shows for p.
func baseName(p string) string {
	if p == "/" {
		return "/"
	}
	return path.Base(p)
}

// withoutAddress keeps of a status line ("stripe N HOST:PORT up|down
// (why) since T") the stripe, its state and since when: anonymous users
// see the health of each stripe, not the internal network (the reasons
// name addresses too).
func withoutAddress(line string) string {
	f := strings.Fields(line)
	since := strings.LastIndex(line, " since ")
	if len(f) < 4 || f[0] != "stripe" || since < 0 {
		return "stripe status hidden"
	}
	return f[0] + " " + f[1] + " " + f[3] + line[since:]
}

// siteSTRIPES reports a striped server's data nodes (one line each).
func siteSTRIPES(ctx context.Context, s *session, arg string) wire.Reply {
	sr, striped := s.dtp.(interface{ StripeStatus() []string })
	if !striped {
		return ok(200, "Not striped: one data node, this host.")
	}
	lines := []string{"Data nodes:"}
	for _, l := range sr.StripeStatus() {
		if s.acct.Anonymous {
			l = withoutAddress(l)
		}
		lines = append(lines, l)
	}
	return wire.Reply{Code: 200, Lines: append(lines, "End.")}
}
