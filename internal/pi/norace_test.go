//go:build !race

package pi_test

const raceEnabled = false
