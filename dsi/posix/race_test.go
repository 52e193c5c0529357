//go:build race

package posix

// raceEnabled says the tests run under the race detector.
const raceEnabled = true
