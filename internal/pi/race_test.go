//go:build race

package pi_test

// raceEnabled says the tests run under the race detector, which makes
// goroutines and their stacks bigger.
const raceEnabled = true
