//go:build race

package null_test

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts around a pool are only meaningful without it.
const raceEnabled = true
