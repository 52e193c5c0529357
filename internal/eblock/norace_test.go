//go:build !race

package eblock

// raceEnabled says the tests run under the race detector.
const raceEnabled = false
