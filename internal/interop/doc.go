// Package interop holds Ferry's integration tests against real programs:
// the ferry binary itself (built once per run), the Grid Community
// Toolkit's globus-gridftp-server and globus-url-copy, curl and lftp.
//
// Nothing here is faked and nothing is skipped: a missing program fails
// the test, because the project's test command ("make test", which runs
// "make deps") installs them. The package has no non-test code.
package interop
