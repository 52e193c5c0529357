package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 for user space on every architecture.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time fields of /proc/PID/stat, in clock ticks.
type procCPU struct {
	utime, stime   int64 // the process's own threads
	cutime, cstime int64 // children it has waited for
}

// total returns all four fields as a duration.
func (c procCPU) total() time.Duration {
	return time.Duration(c.utime+c.stime+c.cutime+c.cstime) * clockTick
}

// parseStat reads the CPU times from the contents of /proc/PID/stat. The
// command name (field 2) is in parentheses and may itself contain spaces
// and parentheses, so the fields are counted from the last ')'.
func parseStat(b []byte) (procCPU, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procCPU{}, errors.New("bench: /proc stat: no command name")
	}
	// After ") " come fields 3 (state) onwards; utime is field 14.
	f := strings.Fields(string(b[i+1:]))
	const first, utime = 3, 14
	if len(f) < utime+4-first {
		return procCPU{}, fmt.Errorf("bench: /proc stat: %d fields after the name, want at least %d", len(f), utime+4-first)
	}
	var v [4]int64
	for k := range v {
		n, err := strconv.ParseInt(f[utime-first+k], 10, 64)
		if err != nil || n < 0 {
			return procCPU{}, fmt.Errorf("bench: /proc stat: bad field %d %q", utime+k, f[utime-first+k])
		}
		v[k] = n
	}
	return procCPU{utime: v[0], stime: v[1], cutime: v[2], cstime: v[3]}, nil
}

// readCPU returns the CPU times of process pid.
func readCPU(pid int) (procCPU, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procCPU{}, err
	}
	return parseStat(b)
}

// procMem is the memory fields of /proc/PID/status, in bytes; a field the
// kernel did not print (a zombie has none) is 0.
type procMem struct {
	rss, hwm int64 // VmRSS and VmHWM, the peak RSS
}

// peak returns VmHWM, or VmRSS when VmHWM is missing.
func (m procMem) peak() int64 { return max(m.hwm, m.rss) }

// parseStatus reads VmRSS and VmHWM from the contents of /proc/PID/status,
// whose lines look like "VmHWM:\t   10240 kB".
func parseStatus(b []byte) (procMem, error) {
	var m procMem
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		var dst *int64
		switch {
		case !ok:
			continue
		case key == "VmRSS":
			dst = &m.rss
		case key == "VmHWM":
			dst = &m.hwm
		default:
			continue
		}
		num, unit, _ := strings.Cut(strings.TrimSpace(val), " ")
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 || unit != "kB" {
			return procMem{}, fmt.Errorf("bench: /proc status: bad %s %q", key, strings.TrimSpace(val))
		}
		*dst = n << 10
	}
	return m, sc.Err()
}

// readMem returns the memory fields of process pid.
func readMem(pid int) (procMem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, err
	}
	return parseStatus(b)
}

// resetPeak sets the VmHWM of process pid back to its current RSS.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// children returns the pids of pid's child processes, from
// /proc/PID/task/*/children (each thread lists the children it forked).
func children(pid int) ([]int, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("bench: no /proc/%d/task/*/children (process gone, or a kernel without CONFIG_PROC_CHILDREN)", pid)
	}
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			return nil, err
		}
		for _, s := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, fmt.Errorf("bench: %s: bad pid %q", f, s)
			}
			pids = append(pids, n)
		}
	}
	return pids, nil
}

// listeningTCP reports whether /proc/net/tcp (contents b) has a socket
// listening on 127.0.0.1:port. Lines look like
// "0: 0100007F:1F90 00000000:0000 0A ...", addresses in the kernel's
// byte order and state 0A meaning LISTEN.
func listeningTCP(b []byte, port int) bool {
	// The address is in the kernel's byte order: 0100007F on little-endian machines.
	le, be := fmt.Sprintf("0100007F:%04X", port), fmt.Sprintf("7F000001:%04X", port)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && (f[1] == le || f[1] == be) && f[3] == "0A" {
			return true
		}
	}
	return false
}
