package privsep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// startTimeout bounds the helper's start and first exchange when ctx has
// no earlier deadline.
const startTimeout = 10 * time.Second

// Start runs `exe privsep-helper -root ROOT` as the local user account and
// returns the storage it serves. exe is the ferry binary (os.Executable());
// it and the directories above it must be executable by the account, and
// root must be an absolute directory the account can reach. An account
// with uid 0 is refused (see [StartOptions]). When this process is not
// root it can only start a helper for its own account. ctx bounds the
// start only; the helper lives until Close.
func Start(ctx context.Context, exe, root, account string) (*FS, error) {
	return StartOptions(ctx, exe, root, account, Options{})
}

// StartOptions is [Start] with options.
func StartOptions(ctx context.Context, exe, root, account string, opts Options) (*FS, error) {
	u, err := lookupUser(account)
	if err != nil {
		return nil, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("privsep: account %q has non-numeric ids %s/%s", account, u.Uid, u.Gid)
	}
	if uid == 0 && !opts.AllowRoot {
		return nil, fmt.Errorf("privsep: account %q has uid 0; refusing to act as root", account)
	}
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("privsep: root %q is not an absolute path", root)
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	switch euid := os.Geteuid(); {
	case euid == 0:
		groups, err := groupIDs(u)
		if err != nil {
			return nil, err
		}
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}
	case uint64(euid) != uid:
		return nil, fmt.Errorf("privsep: running as uid %d, cannot act as account %q (uid %d)", euid, account, uid)
	case uint64(os.Getegid()) != gid:
		return nil, fmt.Errorf("privsep: running as gid %d, cannot act as account %q (gid %d)", os.Getegid(), account, gid)
	}

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("privsep: socketpair: %w", err)
	}
	local := os.NewFile(uintptr(fds[0]), "privsep")
	remote := os.NewFile(uintptr(fds[1]), "privsep-helper")
	defer local.Close()
	c, err := net.FileConn(local)
	if err != nil {
		remote.Close()
		return nil, fmt.Errorf("privsep: %w", err)
	}
	conn := c.(*net.UnixConn)

	cmd := exec.Command(exe, "privsep-helper", "-root", filepath.Clean(root))
	cmd.Dir = "/"
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + u.HomeDir,
		"USER=" + u.Username,
		"LOGNAME=" + u.Username,
	}
	// Go runtime settings pass through; nothing else of the server's
	// environment does.
	for _, k := range []string{"GODEBUG", "GOTRACEBACK", "GORACE", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.ExtraFiles = []*os.File{remote} // descriptor 3
	cmd.Stderr = opts.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	cmd.SysProcAttr = attr
	err = cmd.Start()
	remote.Close()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("privsep: start helper %s as %q (it must be executable by the account): %w", exe, account, err)
	}
	f := newFS(conn, cmd, account)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := f.hello(ctx, uint32(uid), uint32(gid)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lookupUser finds account by name, or by number when it is one.
func lookupUser(account string) (*user.User, error) {
	u, err := user.Lookup(account)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		if _, nerr := strconv.ParseUint(account, 10, 32); nerr == nil {
			u, err = user.LookupId(account)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("privsep: account %q: %w", account, err)
	}
	return u, nil
}

// groupIDs returns the account's groups, its primary group included.
func groupIDs(u *user.User) ([]uint32, error) {
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("privsep: groups of %q: %w", u.Username, err)
	}
	groups := make([]uint32, 0, len(ids))
	for _, id := range ids {
		g, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("privsep: groups of %q: bad id %q", u.Username, id)
		}
		groups = append(groups, uint32(g))
	}
	return groups, nil
}
