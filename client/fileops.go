package client

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Mkdir creates the directory path (MKD).
func (c *Conn) Mkdir(ctx context.Context, p string) error {
	_, err := c.expect(ctx, 2, "MKD %s", p)
	return err
}

// Rmdir removes the empty directory path (RMD).
func (c *Conn) Rmdir(ctx context.Context, p string) error {
	_, err := c.expect(ctx, 2, "RMD %s", p)
	return err
}

// Delete removes the file path (DELE).
func (c *Conn) Delete(ctx context.Context, p string) error {
	_, err := c.expect(ctx, 2, "DELE %s", p)
	return err
}

// Rename renames from to to (RNFR, RNTO).
func (c *Conn) Rename(ctx context.Context, from, to string) error {
	if _, err := c.expect(ctx, 3, "RNFR %s", from); err != nil {
		return err
	}
	_, err := c.expect(ctx, 2, "RNTO %s", to)
	return err
}

// Chmod sets the permission bits of path (SITE CHMOD), including the
// setuid, setgid and sticky bits.
func (c *Conn) Chmod(ctx context.Context, p string, mode os.FileMode) error {
	m := uint32(mode.Perm())
	if mode&os.ModeSetuid != 0 {
		m |= 0o4000
	}
	if mode&os.ModeSetgid != 0 {
		m |= 0o2000
	}
	if mode&os.ModeSticky != 0 {
		m |= 0o1000
	}
	_, err := c.expect(ctx, 2, "SITE CHMOD %04o %s", m, p)
	return err
}

// Checksum asks the server for the checksum of length bytes of path from
// offset off (CKSM); a negative length means up to the end of the file.
// alg is an algorithm the server lists in FEAT CKSM, such as MD5, ADLER32,
// SHA1, SHA256 or SHA512. The result is lower-case hex.
func (c *Conn) Checksum(ctx context.Context, alg, p string, off, length int64) (string, error) {
	if length < 0 {
		length = -1
	}
	r, err := c.expect(ctx, 2, "CKSM %s %d %d %s", alg, off, length, p)
	if err != nil {
		return "", err
	}
	sum := strings.ToLower(strings.TrimSpace(r.Lines[len(r.Lines)-1]))
	// Every CKSM algorithm answers in hex; anything else (control
	// characters a hostile server would have a terminal print) is refused.
	if sum == "" || len(sum) > 256 || strings.Trim(sum, "0123456789abcdef") != "" {
		return "", fmt.Errorf("client: CKSM %s: bad reply %q", p, r.Text())
	}
	return sum, nil
}

// Cwd changes the working directory (CWD).
func (c *Conn) Cwd(ctx context.Context, p string) error {
	_, err := c.expect(ctx, 2, "CWD %s", p)
	return err
}

// Pwd returns the working directory (PWD). The path is the text between
// the first and the last double quote of the 257 reply, with doubled
// quotes undone (RFC 959 appendix II).
func (c *Conn) Pwd(ctx context.Context) (string, error) {
	r, err := c.expect(ctx, 2, "PWD")
	if err != nil {
		return "", err
	}
	return parsePWD(r)
}

func parsePWD(r Reply) (string, error) {
	t := r.Lines[0]
	i := strings.IndexByte(t, '"')
	j := strings.LastIndexByte(t, '"')
	if r.Code != 257 || i < 0 || j <= i {
		return "", fmt.Errorf("client: PWD: bad reply %q", r.Text())
	}
	return strings.ReplaceAll(t[i+1:j], `""`, `"`), nil
}
