# Ferry's build, test and demo entry points. "make test" is what CI runs
# (.ci/run); it installs the programs the interop tests need.

GO ?= go

.PHONY: all build install deps vet test demo bench bench-stream package fuzz clean

PREFIX ?= /usr/local

all: build

build:
	$(GO) build -o bin/ferry ./cmd/ferry

# The package's version: internal/version's, unless given.
VERSION ?= $(shell sed -n 's/^const Version = "\(.*\)"/\1/p' internal/version/version.go)
DEB_ARCH ?= $(shell $(GO) env GOARCH)

# Builds the Debian package bin/ferry_$(VERSION)_$(DEB_ARCH).deb: the binary,
# manual pages written from the commands' own help (ferry man), the
# systemd unit, /etc/ferry/ferry.conf and the maintainer scripts of
# packaging/, put together by internal/tools/mkdeb (nfpm as a Go library,
# no other tool needed). See packaging/README.md.
package:
	$(GO) build -trimpath -ldflags=-s -o bin/pkg/ferry ./cmd/ferry
	rm -rf bin/pkg/man
	bin/pkg/ferry man -dir bin/pkg/man
	$(GO) run ./internal/tools/mkdeb -bin bin/pkg/ferry -man bin/pkg/man -src packaging -version $(VERSION) -arch $(DEB_ARCH) -out bin

# Copies bin/ferry to $(PREFIX)/bin. With GUC_LINK=1 it also links
# $(PREFIX)/bin/globus-url-copy to it: run under that name, ferry is a
# drop-in for globus-url-copy (docs/migrating-from-globus-url-copy.md).
# Off by default, as it shadows GCT's globus-url-copy when $(PREFIX)/bin
# comes first on PATH.
GUC_LINK ?= 0

install: build
	install -D -m 0755 bin/ferry $(DESTDIR)$(PREFIX)/bin/ferry
	@if [ "$(GUC_LINK)" = 1 ]; then \
		echo "ln -sf ferry $(DESTDIR)$(PREFIX)/bin/globus-url-copy"; \
		ln -sf ferry $(DESTDIR)$(PREFIX)/bin/globus-url-copy; \
	fi

# Installs globus-gridftp-server, globus-url-copy, curl, lftp, iperf3,
# PostgreSQL, Prometheus and the rest scripts/deps.sh lists with apt-get when any is
# missing (sudo if not root), then the Go modules.
deps:
	scripts/deps.sh

vet:
	$(GO) vet ./...

# Everything runs with the race detector, the interop tests included (they
# build the ferry binary with -race too); about 10 minutes on 2 cores, and it
# should stay under 15.
test: deps vet
	$(GO) test -race -count=1 -timeout 20m ./...

# Runs every fuzz target, one at a time, for FUZZTIME each (go test
# -fuzztime: 30s, 10m, or 10000000x executions) and prints a table of
# executions, seconds, new corpus entries and result per target, also
# written to FUZZTABLE. Crashes land in the packages' testdata/fuzz
# corpora. FUZZ_ONLY, FUZZ_SKIP, FUZZ_PARALLEL and FUZZ_CAP (see
# scripts/fuzz.sh) narrow or bound the run; docs/fuzzing.md has the
# numbers of a real one.
FUZZTIME ?= 30s
FUZZTABLE ?= bin/fuzz-table.md
fuzz:
	scripts/fuzz.sh $(FUZZTIME) $(FUZZTABLE)

# Serves a fresh directory, copies a 512 MiB file up and back with ferry
# cp, checks the checksums and prints the rates.
demo: build
	scripts/demo.sh bin/ferry

# Loopback data-plane benchmark: Ferry vs GCT vs raw TCP (iperf3),
# memory-to-memory and page-cached disk-to-disk, p = 1, 4, 8, 4 GiB, 3 runs
# each, alternated. A few minutes; not part of "make test".
bench: build
	bin/ferry bench loopback -csv bin/bench.csv

# Stream-mode 1 GiB downloads on loopback: Ferry vs the GCT server. Not
# part of "make test".
bench-stream: build
	scripts/bench-stream.sh bin/ferry

clean:
	rm -rf bin
