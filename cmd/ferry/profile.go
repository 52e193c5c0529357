package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the whole process to
// $FERRY_CPUPROFILE.PID when that variable is set (a developer's aid: the
// benchmarks start clients and servers as processes of their own, so a
// profile per PID). The returned function ends the profile.
func startProfile() (stop func()) {
	base := os.Getenv("FERRY_CPUPROFILE")
	if base == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", base, os.Getpid()))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferry: FERRY_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
