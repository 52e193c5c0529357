//go:build !race

package null_test

const raceEnabled = false
