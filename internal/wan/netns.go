package wan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where "ip netns" keeps its named namespaces.
const netnsDir = "/run/netns"

// inNetns runs f on an OS thread that has entered the named network
// namespace, so that sockets, TUN devices and /proc/sys/net files f opens
// belong to it. The thread returns to its own namespace afterwards; if it
// cannot, it is left locked and dies with the goroutine, never reused.
// A ctx already done runs nothing; f itself is not interrupted (it may
// hold the caller's variables), so it should watch ctx if it blocks.
func inNetns(ctx context.Context, name string, f func() error) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer back.Close()
		target, err := os.Open(filepath.Join(netnsDir, name))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("wan: namespace %s: %w", name, err)
			return
		}
		err = unix.Setns(int(target.Fd()), unix.CLONE_NEWNET)
		target.Close()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("wan: entering namespace %s: %w", name, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(back.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("wan: leaving namespace %s: %w", name, err))
			return // still locked: the thread exits with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setSysctl writes a sysctl such as "net.ipv4.tcp_rmem" in the namespace
// the calling thread is in.
func setSysctl(key, value string) error {
	if strings.Contains(key, "/") || strings.Contains(key, "..") || key == "" {
		return fmt.Errorf("wan: bad sysctl name %q", key)
	}
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	if err := os.WriteFile(path, []byte(value), 0); err != nil {
		return fmt.Errorf("wan: sysctl %s=%s: %w", key, value, err)
	}
	return nil
}

// run runs an iproute2 command and returns its error with its output.
func run(ctx context.Context, stdin string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("wan: %s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func addNetns(ctx context.Context, name string) error {
	err := run(ctx, "", "ip", "netns", "add", name)
	if err != nil && namespaceExists(name) {
		// ip was stopped (ctx done) after it made the namespace, and
		// callers tear down only what they know they made.
		_ = delNetns(name)
	}
	return err
}

func delNetns(name string) error {
	// Not bound to a context: cleanup must run after cancellation too.
	return run(context.Background(), "", "ip", "netns", "delete", name)
}

// namespaceExists reports whether the named namespace is still mounted.
func namespaceExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// staleName matches our namespace names: PREFIX-PID-SEQ-c or -s.
var staleName = regexp.MustCompile(`^(.+)-([0-9]+)-([0-9]+)-[cs]$`)

// removeStale deletes the namespaces named by prefix whose creating process
// is gone: what an earlier run killed before its cleanup left behind.
func removeStale(prefix string) error { return removeStaleMatching(prefix, staleName) }

// removeStaleMatching is removeStale for names that re matches with the
// prefix and the pid as its first two groups.
func removeStaleMatching(prefix string, re *regexp.Regexp) error {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		m := re.FindStringSubmatch(e.Name())
		if m == nil || m[1] != prefix {
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if err := delNetns(e.Name()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
