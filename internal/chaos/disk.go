package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// replyCode finds an FTP error reply (4xx or 5xx) in ferry's output.
var replyCode = regexp.MustCompile(`(?m)(^|: )[45]\d\d `)

// mountTmpfs mounts a tmpfs of size bytes at a new directory under the
// scratch dir; it is unmounted when Run returns.
func (h *harness) mountTmpfs(name string, size int64) (string, error) {
	dir := filepath.Join(h.scratch, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("mount tmpfs: %v: %s", err, out)
	}
	h.cleanup = append(h.cleanup, func() {
		if exec.Command("umount", dir).Run() != nil {
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir, nil
}

func remount(dir, mode string) error {
	out, err := exec.Command("mount", "-o", "remount,"+mode, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// disk copies onto file systems that fill up or turn read-only during the
// copy. Each failing copy must end with a non-zero exit and an FTP error
// reply (or, downloading, the local error), and leave no partial file
// under the destination's name.
func (h *harness) disk(ctx context.Context) (Result, error) {
	var r Result
	if os.Geteuid() != 0 {
		r.notef("skipped: mounting a tmpfs needs root")
		return r, nil
	}
	local := filepath.Join(h.scratch, "disk-local")
	if err := os.MkdirAll(local, 0o755); err != nil {
		return r, err
	}
	const fsSize, fileSize = 8 << 20, 16 << 20
	src := filepath.Join(local, "up.bin")
	want, err := writeRandom(src, fileSize, 31)
	if err != nil {
		return r, err
	}

	// A server whose disk fills up during uploads.
	full, err := h.mountTmpfs("disk-full", fsSize)
	if err != nil {
		return r, err
	}
	s, err := h.startSite("disk-full", full, 0)
	if err != nil {
		return r, err
	}
	for _, p := range []string{"1", "4"} {
		name := "up-p" + p + ".bin"
		res := runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, nil, s.dumpAll, "cp", "-p", p, src, s.url(name))
		h.expectFailure(&r, fmt.Sprintf("upload of %d bytes (-p %s) to a %d-byte tmpfs", fileSize, p, fsSize), res, filepath.Join(full, name), want, "", true)
		os.Remove(filepath.Join(full, "."+name+".ferry-part"))
	}
	if err := s.waitUp(ctx, 10*time.Second); err != nil {
		r.Failed++
		r.notef("the server after its disk filled up: %v", err)
	}

	// The client's disk fills up during a download.
	fullc, err := h.mountTmpfs("disk-full-client", fsSize)
	if err != nil {
		return r, err
	}
	plain, err := h.startSite("disk-source", "", 0)
	if err != nil {
		return r, err
	}
	if _, err := writeRandom(filepath.Join(plain.root, "down.bin"), fileSize, 31); err != nil {
		return r, err
	}
	for _, p := range []string{"1", "4"} {
		dst := filepath.Join(fullc, "down-p"+p+".bin")
		res := runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, nil, plain.dumpAll, "cp", "-p", p, plain.url("down.bin"), dst)
		h.expectFailure(&r, fmt.Sprintf("download of %d bytes (-p %s) to a %d-byte tmpfs", fileSize, p, fsSize), res, dst, want, dst+".ferry-ranges", false)
		os.Remove(dst)
		os.Remove(dst + ".ferry-ranges")
	}

	// A server whose file system turns read-only during an upload.
	ro, err := h.mountTmpfs("disk-ro", 64<<20)
	if err != nil {
		return r, err
	}
	s, err = h.startSite("disk-ro", ro, 0)
	if err != nil {
		return r, err
	}
	big := filepath.Join(local, "big.bin")
	bigWant, err := writeRandom(big, 48<<20, 32)
	if err != nil {
		return r, err
	}
	for _, p := range []string{"1", "4"} {
		name := "ro-p" + p + ".bin"
		target, part := filepath.Join(ro, name), filepath.Join(ro, "."+name+".ferry-part")
		args := []string{"cp", "-p", p, big, s.url(name)}
		kill := make(chan struct{})
		first := make(chan runResult, 1)
		go func() { first <- runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, kill, s.dumpAll, args...) }()
		// Wait for the part file, then turn the file system read-only.
		// Linux refuses (EBUSY) while a file is open for writing; then
		// the client is killed, which closes the server's file, and the
		// resumed upload meets the read-only file system.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := os.Stat(part); err == nil {
				break
			}
		}
		what := fmt.Sprintf("upload of %d bytes (-p %s), file system remounted read-only", 48<<20, p)
		if err := remount(ro, "ro"); err != nil {
			close(kill)
			res := <-first
			ok := false
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if remount(ro, "ro") == nil {
					ok = true
					break
				}
			}
			if !ok {
				return r, fmt.Errorf("remount read-only: %v", err)
			}
			if p == "1" {
				r.notef("read-only: Linux refused the remount while the upload ran (%v), so the client was killed (%v) and the upload resumed onto the read-only file system", err, res.err)
			}
			what += " between a killed run and its resume"
			res = runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, nil, s.dumpAll, args...)
			h.expectFailure(&r, what, res, target, bigWant, "", true)
		} else {
			res := <-first
			what += " mid-transfer"
			h.expectFailure(&r, what, res, target, bigWant, "", true)
		}
		// Writable again, the same command completes the upload.
		if err := remount(ro, "rw"); err != nil {
			return r, err
		}
		res := runCmd(ctx, h.cfg.Ferry, h.env, h.cfg.StepBound, nil, s.dumpAll, args...)
		r.Rounds++
		if res.err != nil {
			r.Lost++
			r.notef("%s: after the remount read-write the upload failed: %v: %s", what, res.err, lastLines(res.out, 2))
		} else if sum, _, err := fileSum(target); err != nil || sum != bigWant {
			r.Corrupt++
			r.notef("%s: after the remount read-write the upload differs (%v)", what, err)
		}
		os.Remove(target)
		os.Remove(part)
	}
	return r, nil
}

// expectFailure checks a copy that had to fail: a non-zero exit, an FTP
// error reply in its output when fromServer, and no file under the
// destination's name unless it is complete (or, for partialMark not
// empty, that file marks it partial).
func (h *harness) expectFailure(r *Result, what string, res runResult, dst string, want [32]byte, partialMark string, fromServer bool) {
	r.Rounds++
	r.MaxTime = max(r.MaxTime, res.took)
	msg := lastLines(res.out, 2)
	switch {
	case res.hung:
		r.Hangs++
		r.notef("%s: hung; dump in %s", what, h.keep(filepath.Base(dst)+".hang.txt", res.out))
		return
	case res.err == nil:
		r.Failed++
		r.notef("%s: ferry cp succeeded", what)
	case fromServer && !replyCode.MatchString(res.out):
		r.Failed++
		r.notef("%s: no 4xx/5xx reply in %q", what, msg)
	default:
		r.notef("%s: exit %d: %s", what, exitCode(res.err), firstLine(msg))
	}
	if partialMark != "" {
		if _, err := os.Stat(partialMark); err == nil {
			return
		}
	}
	sum, n, err := fileSum(dst)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil || sum != want {
		r.Corrupt++
		r.notef("%s: %s holds %d bytes, not the source's, with nothing marking it partial", what, filepath.Base(dst), n)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
