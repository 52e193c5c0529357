package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/wire"
)

// ErrUnsafeName is matched by the error of a listing that holds a name
// which is no single path element (see List).
var ErrUnsafeName = wire.ErrUnsafeName

// maxListing bounds the size of a listing read into memory.
const maxListing = 256 << 20

// List returns the entries of the directory path, without "." and ".."
// (the cdir and pdir entries). A listing with a name that is empty or
// holds a "/" or a NUL fails with an error matching ErrUnsafeName:
// joined onto a local directory such a name ("x/..") could leave it. It uses MLSD when the server offers MLST,
// else LIST, whose lines are parsed as Unix "ls -l" lines; lines that are
// no entries ("total 8") are skipped. An object that is no file,
// directory or link (a FIFO, socket or device) has an OS-specific Type
// such as wire.TypeFIFO ("OS.unix=fifo", RFC 3659 §7.5.1), from MLSD or
// from LIST's mode string alike: it is nothing to download. Listing a
// file returns that file's entry on servers that allow it (GCT does).
func (c *Conn) List(ctx context.Context, p string) ([]Entry, error) {
	mlsd := c.hasFeature("MLST")
	command := "LIST"
	if mlsd {
		command = "MLSD"
	}
	lines, err := c.listing(ctx, command, p)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []Entry
	for _, l := range lines {
		var e Entry
		var err error
		if mlsd {
			e, err = wire.ParseFactsLine(l)
		} else {
			e, err = wire.ParseLISTLine(l, now)
			if errors.Is(err, wire.ErrNotEntry) {
				continue
			}
			if err == nil && e.Type == "" {
				e.Type = listOSType(l)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: %w", command, p, err)
		}
		t := strings.ToLower(e.Type)
		if t == "cdir" || t == "pdir" || e.Name == "." || e.Name == ".." {
			continue
		}
		if err := wire.CheckEntryName(e.Name); err != nil {
			// Listing a file may echo its path: accept that as the
			// file's own name, and nothing else with a "/".
			base := path.Base(e.Name)
			if len(lines) != 1 || t == "dir" || !strings.Contains(e.Name, "/") || base != path.Base(p) || wire.CheckEntryName(base) != nil {
				return nil, fmt.Errorf("client: %s %s: %w", command, p, err)
			}
			e.Name = base
		}
		out = append(out, e)
	}
	return out, nil
}

// listOSType is the Type of a LIST line whose ls mode string names no
// file, directory or link: an OS-specific type (wire.TypeFIFO, ...), as
// MLSD would give, never "" (which callers would take for a file).
func listOSType(line string) string {
	switch strings.TrimLeft(line, " ")[0] {
	case 'p':
		return wire.TypeFIFO
	case 's':
		return wire.TypeSocket
	case 'c':
		return wire.TypeCharDevice
	case 'b':
		return wire.TypeBlockDevice
	}
	return "OS.unix=other"
}

// NameList returns the names NLST gives for path, without "." and "..".
func (c *Conn) NameList(ctx context.Context, p string) ([]string, error) {
	lines, err := c.listing(ctx, "NLST", p)
	if err != nil {
		return nil, err
	}
	out := lines[:0]
	for _, l := range lines {
		if b := path.Base(l); b == "." || b == ".." {
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

// listing runs a listing command over the data connection and returns its
// non-empty lines.
func (c *Conn) listing(ctx context.Context, command, p string) ([]string, error) {
	line := command
	if p != "" {
		line += " " + p
	}
	var buf bytes.Buffer
	_, err := c.transfer(ctx, nil, 0, nil, line, func(conn net.Conn) (int64, error) {
		n, err := io.Copy(&buf, io.LimitReader(conn, maxListing+1))
		if err == nil && n > maxListing {
			err = fmt.Errorf("listing larger than %d bytes", maxListing)
		}
		return n, err
	})
	if err != nil {
		return nil, err
	}
	var lines []string
	for l := range strings.SplitSeq(buf.String(), "\n") {
		l = strings.TrimSuffix(l, "\r")
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// Stat describes the file or directory path. It uses MLST when the server
// offers it. Otherwise it probes with CWD (a directory; the working
// directory is restored) and then SIZE and MDTM (a file); the entry then
// has only Name, Type, Size and Modify.
func (c *Conn) Stat(ctx context.Context, p string) (Entry, error) {
	if c.hasFeature("MLST") {
		r, err := c.expect(ctx, 2, "MLST %s", p)
		if err != nil {
			return Entry{}, err
		}
		// 250-status of p / facts line / 250 End.
		for _, l := range r.Lines[1:] {
			if strings.Contains(l, "=") {
				return parseMLSTLine(l, p)
			}
		}
		return Entry{}, fmt.Errorf("client: MLST %s: no facts in reply %q", p, r.Text())
	}
	e := wire.NewEntry(path.Base(p))
	isDir, err := c.isDir(ctx, p)
	if err != nil {
		return Entry{}, err
	}
	if isDir {
		e.Type = "dir"
	} else {
		e.Type = "file"
		if e.Size, err = c.Size(ctx, p); err != nil {
			return Entry{}, err
		}
	}
	if t, err := c.ModTime(ctx, p); err == nil {
		e.Modify = t
	} else if c.err != nil {
		return Entry{}, err
	}
	return e, nil
}

// parseMLSTLine parses the facts line of an MLST reply. MLST echoes the
// path as given; the entry's Name is its last element.
func parseMLSTLine(l, p string) (Entry, error) {
	e, err := wire.ParseFactsLine(l)
	if err != nil {
		return Entry{}, fmt.Errorf("client: MLST %s: %w", p, err)
	}
	if e.Name != "" {
		e.Name = path.Base(e.Name)
	}
	return e, nil
}

// isDir probes path with CWD and changes back.
func (c *Conn) isDir(ctx context.Context, p string) (bool, error) {
	wd, err := c.Pwd(ctx)
	if err != nil {
		return false, err
	}
	r, err := c.cmd(ctx, "CWD %s", p)
	if err != nil {
		return false, err
	}
	if r.Class() != 2 {
		return false, nil
	}
	if err := c.Cwd(ctx, wd); err != nil {
		// Left in p, later relative paths would resolve wrongly.
		c.close()
		return false, err
	}
	return true, nil
}

// Size returns the size of path in bytes (SIZE).
func (c *Conn) Size(ctx context.Context, p string) (int64, error) {
	r, err := c.expect(ctx, 2, "SIZE %s", p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(r.Text()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("client: SIZE %s: bad reply %q", p, r.Text())
	}
	return n, nil
}

// ModTime returns the modification time of path (MDTM), in UTC.
func (c *Conn) ModTime(ctx context.Context, p string) (time.Time, error) {
	r, err := c.expect(ctx, 2, "MDTM %s", p)
	if err != nil {
		return time.Time{}, err
	}
	t, err := wire.ParseTime(strings.TrimSpace(r.Text()))
	if err != nil {
		return time.Time{}, fmt.Errorf("client: MDTM %s: %w", p, err)
	}
	return t, nil
}

// SetModTime sets the modification time of path (MFMT), to the second.
func (c *Conn) SetModTime(ctx context.Context, p string, t time.Time) error {
	_, err := c.expect(ctx, 2, "MFMT %s %s", wire.FormatTime(t), p)
	return err
}
