//go:build race

package interop

// raceEnabled says the tests run with -race; the ferry binary is then
// built with -race too.
const raceEnabled = true
