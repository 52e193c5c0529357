module github.com/ferrygrid/ferry

go 1.26
