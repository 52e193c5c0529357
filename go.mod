module github.com/ferrygrid/ferry

go 1.26.0

require (
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)
