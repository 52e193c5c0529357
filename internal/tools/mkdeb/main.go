// Command mkdeb builds Ferry's Debian package (internal/pkgdeb, with nfpm
// as a library): "make package" runs it after building bin/ferry and its
// manual pages.
//
//	go run ./internal/tools/mkdeb -bin bin/ferry -man bin/man -version 0.1.0 -out bin
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ferrygrid/ferry/internal/pkgdeb"
)

func main() {
	var o pkgdeb.Options
	flag.StringVar(&o.Binary, "bin", "bin/ferry", "the ferry `BINARY`")
	flag.StringVar(&o.ManDir, "man", "bin/man", "`DIR` of the manual pages (ferry man -dir)")
	flag.StringVar(&o.Source, "src", "packaging", "the packaging `DIR` (unit, config, maintainer scripts)")
	flag.StringVar(&o.Version, "version", "", "Debian upstream `VERSION` (required)")
	flag.StringVar(&o.Arch, "arch", "amd64", "Debian `ARCH`")
	flag.StringVar(&o.OutDir, "out", "bin", "output `DIR`")
	epoch := flag.Int64("mtime", 0, "file time, `SECONDS` since 1970 (default: $SOURCE_DATE_EPOCH, else now)")
	flag.Parse()
	if *epoch == 0 {
		fmt.Sscan(os.Getenv("SOURCE_DATE_EPOCH"), epoch)
	}
	if *epoch != 0 {
		o.MTime = time.Unix(*epoch, 0)
	}
	out, err := pkgdeb.Build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdeb:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}
