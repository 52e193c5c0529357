#!/usr/bin/env bash
# Ferry demo: serve a fresh directory with "ferry serve", upload a 512 MiB
# file with "ferry cp", download it back, and check that the checksums
# agree (sha256sum on both copies, "ferry cksum" against md5sum and
# sha256sum). Prints bytes, seconds and rate for each direction.
#
# usage: scripts/demo.sh [FERRY_BINARY]   (default bin/ferry; "make demo")
set -euo pipefail

ferry=${1:-bin/ferry}
size_mib=${DEMO_MIB:-512}
[ -x "$ferry" ] || { echo "demo: $ferry not found; run 'make build'" >&2; exit 1; }
ferry=$(cd "$(dirname "$ferry")" && pwd)/$(basename "$ferry")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-demo.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/served" "$tmp/local"

# Start the server on a free port and read the port from its first line.
"$ferry" serve -listen 127.0.0.1:0 -root "$tmp/served" -anonymous-write \
	>"$tmp/serve.out" 2>"$tmp/serve.log" &
server_pid=$!
addr=
for _ in $(seq 100); do
	line=$(head -n1 "$tmp/serve.out" 2>/dev/null || true)
	if [[ $line =~ ^Server\ listening\ at\ (.+)$ ]]; then
		addr=${BASH_REMATCH[1]}
		break
	fi
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$addr" ]; then
	echo "demo: ferry serve did not start:" >&2
	cat "$tmp/serve.log" >&2
	exit 1
fi
port=${addr##*:}
url=ftp://127.0.0.1:$port
echo "ferry serve: listening at $addr, serving $tmp/served"

src=$tmp/local/demo.bin
echo "generating a ${size_mib} MiB random file"
head -c $((size_mib << 20)) /dev/urandom >"$src"
bytes=$(stat -c %s "$src")

now() { date +%s.%N; }
report() { # direction bytes start end
	awk -v d="$1" -v b="$2" -v s="$3" -v e="$4" 'BEGIN {
		t = e - s; if (t <= 0) t = 1e-9
		printf "%-9s %d bytes in %.3f s: %.1f MiB/s (%.2f Gbit/s)\n", d, b, t, b / t / 1048576, b * 8 / t / 1e9
	}'
}

t0=$(now)
"$ferry" cp -q "$src" "$url/demo.bin"
t1=$(now)
"$ferry" cp -q "$url/demo.bin" "$tmp/local/back.bin"
t2=$(now)

echo
report upload "$bytes" "$t0" "$t1"
report download "$bytes" "$t1" "$t2"
echo

sum_src=$(sha256sum <"$src" | cut -d' ' -f1)
sum_srv=$(sha256sum <"$tmp/served/demo.bin" | cut -d' ' -f1)
sum_back=$(sha256sum <"$tmp/local/back.bin" | cut -d' ' -f1)
md5_src=$(md5sum <"$src" | cut -d' ' -f1)
cksum_md5=$("$ferry" cksum "$url/demo.bin" | cut -d' ' -f1)
cksum_sha=$("$ferry" cksum -a SHA256 "$url/demo.bin" | cut -d' ' -f1)

ok=true
check() { # what got want
	if [ "$2" = "$3" ]; then
		printf '  ok   %-34s %s\n' "$1" "$2"
	else
		printf '  FAIL %-34s %s, want %s\n' "$1" "$2" "$3"
		ok=false
	fi
}
echo "checksums:"
check "sha256sum of the uploaded copy" "$sum_srv" "$sum_src"
check "sha256sum of the downloaded copy" "$sum_back" "$sum_src"
check "ferry cksum (MD5) vs md5sum" "$cksum_md5" "$md5_src"
check "ferry cksum -a SHA256 vs sha256sum" "$cksum_sha" "$sum_src"

if $ok; then
	echo "demo: OK"
else
	echo "demo: checksums differ" >&2
	exit 1
fi
