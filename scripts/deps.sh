#!/usr/bin/env bash
# Installs the programs the tests run against (the GCT GridFTP server,
# globus-url-copy and GCT's proxy tools, curl, lftp, iperf3, openssl, iproute2,
# PostgreSQL, whose private clusters the history tests start, an MIT
# Kerberos KDC and python3-gssapi for the Kerberos tests, Prometheus,
# which the metrics test starts to scrape ferry serve, and Chromium, the
# browser of the ferry web tests) on Debian/Ubuntu when any is missing,
# then downloads the Go modules. Used by "make deps".
set -euo pipefail

missing=()
command -v globus-url-copy >/dev/null || missing+=(globus-gass-copy-progs)
[ -x /usr/sbin/globus-gridftp-server ] || missing+=(globus-gridftp-server-progs)
command -v curl >/dev/null || missing+=(curl)
command -v lftp >/dev/null || missing+=(lftp)
command -v iperf3 >/dev/null || missing+=(iperf3)
command -v openssl >/dev/null || missing+=(openssl)
# ip and tc, for the network namespaces of the WAN emulator (internal/wan).
{ command -v ip && command -v tc; } >/dev/null || missing+=(iproute2)
command -v grid-proxy-init >/dev/null || missing+=(globus-proxy-utils)
command -v grid-cert-info >/dev/null || missing+=(globus-gsi-cert-utils-progs)
# initdb and pg_ctl, for internal/testutil/postgres (Debian keeps them off $PATH).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null || missing+=(postgresql)
# The Prometheus server, for the end-to-end test of ferry serve -metrics.
command -v prometheus >/dev/null || missing+=(prometheus)
# An MIT Kerberos KDC (krb5kdc, kdb5_util), kadmin.local and kinit, for
# internal/testutil/krb5kdc (Debian keeps the KDC programs in /usr/sbin).
{ [ -x /usr/sbin/krb5kdc ] || command -v krb5kdc; } >/dev/null || missing+=(krb5-kdc)
{ [ -x /usr/sbin/kadmin.local ] || command -v kadmin.local; } >/dev/null || missing+=(krb5-admin-server)
command -v kinit >/dev/null || missing+=(krb5-user)
# MIT's GSS-API for Python, for the Kerberos FTP client of server/testdata/krbftp.py.
/usr/bin/python3 -c 'import gssapi' 2>/dev/null || missing+=(python3-gssapi)
# The package test (cmd/ferry TestPackage): adduser for its maintainer
# scripts, systemd-analyze to verify its unit, groff to check the manual
# pages (TestManPages).
command -v adduser >/dev/null || missing+=(adduser)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v groff >/dev/null || missing+=(groff-base)
# Debian's Chromium, which the tests of ferry web (web/) drive headless
# over the DevTools protocol (chromedp).
command -v chromium >/dev/null || missing+=(chromium)
# Debian's Firefox ESR, which web/firefox_test.go drives headless over
# WebDriver BiDi (internal/testutil/bidi).
command -v firefox-esr >/dev/null || missing+=(firefox-esr)

if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	if ! command -v apt-get >/dev/null; then
		echo "deps: apt-get not found; install ${missing[*]} by hand" >&2
		exit 1
	fi
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null; then
			sudo=(sudo)
		else
			echo "deps: not root and no sudo; install ${missing[*]} by hand" >&2
			exit 1
		fi
	fi
	"${sudo[@]}" apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
else
	echo "deps: GCT server and tools, curl, lftp, iperf3, openssl, iproute2, PostgreSQL, Kerberos, Prometheus, Chromium, adduser, systemd-analyze and groff are installed"
fi

go mod download

# SeaweedFS's weed, the real S3 server of the S3 back-end's tests
# (internal/testutil/s3server), built once per machine from its Go module
# into the cache directory the tests look in. Debian packages no S3
# server, and "go install" refuses the module (its go.mod has replace
# directives), so it is built inside the downloaded module.
weed_version=$(sed -n 's/^const Version = "\(.*\)"/\1/p' internal/testutil/s3server/s3server.go)
weed_dir="${XDG_CACHE_HOME:-$HOME/.cache}/ferry-test/weed-$weed_version"
if [ -n "${FERRY_WEED:-}" ] || [ -x "$weed_dir/weed" ]; then
	echo "deps: weed (SeaweedFS $weed_version) is built"
else
	echo "deps: building weed (SeaweedFS $weed_version) into $weed_dir; several minutes"
	weed_src=$(cd "${TMPDIR:-/tmp}" && GO111MODULE=on GOFLAGS= go mod download -json "github.com/seaweedfs/seaweedfs@$weed_version" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	mkdir -p "$weed_dir"
	(cd "$weed_src" && go build -o "$weed_dir/weed.tmp" ./weed)
	mv "$weed_dir/weed.tmp" "$weed_dir/weed"
fi
