package memory

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// Limits bounds the memory an [FS] may hold. Every write, and every Create
// that announces a size, that would take a file past MaxFileSize or all
// files together past MaxTotal fails with [dsi.ErrNoSpace] before anything
// is allocated. Removing, replacing or truncating a file gives its bytes
// back to the budget once no reader or writer has it open.
type Limits struct {
	// MaxFileSize is the largest size, in bytes, a file may reach.
	// Zero or negative means MaxTotal.
	MaxFileSize int64
	// MaxTotal is the most bytes, in bytes of file content, that all files
	// together may hold, counting files that were removed but are still
	// open. Zero or negative means DefaultLimits().MaxTotal.
	//
	// Growing a file allocates up to a quarter more than its size, and
	// while a file grows its old and new copies both exist, so the memory
	// actually used can reach about 2.25 times MaxTotal for a moment.
	MaxTotal int64
}

// DefaultMaxTotalFallback is the total budget used when the machine's
// memory cannot be read.
const DefaultMaxTotalFallback = 1 << 30

// DefaultLimits returns the limits of [New]: a total budget of a quarter of
// the memory available to the process (the smallest of MemTotal in
// /proc/meminfo, the cgroup memory limit and GOMEMLIMIT), or
// [DefaultMaxTotalFallback] when none of them is known, and a file size
// limit equal to that budget.
func DefaultLimits() Limits {
	total := defaultMaxTotal()
	return Limits{MaxFileSize: total, MaxTotal: total}
}

// defaultMaxTotal reads the machine's memory once.
var defaultMaxTotal = sync.OnceValue(func() int64 {
	mem, ok := availableMemory()
	if !ok {
		return DefaultMaxTotalFallback
	}
	return max(mem/4, 1)
})

// normalize fills defaults and clamps the limits so that a file always fits
// in an int.
func (l Limits) normalize() Limits {
	if l.MaxTotal <= 0 {
		l.MaxTotal = defaultMaxTotal()
	}
	l.MaxTotal = min(l.MaxTotal, math.MaxInt)
	if l.MaxFileSize <= 0 || l.MaxFileSize > l.MaxTotal {
		l.MaxFileSize = l.MaxTotal
	}
	return l
}

// availableMemory is the smallest known bound on the memory this process
// may use.
func availableMemory() (int64, bool) {
	var mem int64 = math.MaxInt64
	found := false
	take := func(n int64, ok bool) {
		if ok && n > 0 && n < mem {
			mem, found = n, true
		}
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		take(parseMemInfo(f))
		f.Close()
	}
	// cgroup v2, then v1; v2's "max" does not parse and v1's "unlimited"
	// (close to MaxInt64) is above any real machine.
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
			take(n, err == nil && n < 1<<50)
		}
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		take(l, true)
	}
	return mem, found
}

// parseMemInfo returns MemTotal, in bytes, from /proc/meminfo text.
func parseMemInfo(r io.Reader) (int64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 || kb > math.MaxInt64/1024 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}
