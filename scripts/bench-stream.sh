#!/usr/bin/env bash
# Stream-mode (MODE S) 1 GiB downloads on loopback, Ferry against the GCT
# GridFTP server, alternating cases, each repeated ROUNDS times (3):
#
#   a  ferry serve -storage null  <-  ferry cp ftp://…/1G /dev/null
#   b  GCT globus-gridftp-server  <-  globus-url-copy -len 1G ftp://…/dev/zero /dev/null
#   c  GCT globus-gridftp-server  <-  ferry cp -len 1G ftp://…/dev/zero /dev/null
#   d  ferry serve -storage null  <-  globus-url-copy ftp://…/1G /dev/null
#
# No disk is involved on either side. Times are wall clock per client run
# (process start, login and transfer). Prints a Markdown table.
#
# usage: scripts/bench-stream.sh [FERRY_BINARY]   (default bin/ferry; "make bench-stream")
set -euo pipefail

ferry=${1:-bin/ferry}
rounds=${ROUNDS:-3}
gct=/usr/sbin/globus-gridftp-server
size=$((1 << 30))
[ -x "$ferry" ] || { echo "bench: $ferry not found; run 'make build'" >&2; exit 1; }
[ -x "$gct" ] || { echo "bench: $gct not found; run 'make deps'" >&2; exit 1; }
command -v globus-url-copy >/dev/null || { echo "bench: globus-url-copy not found; run 'make deps'" >&2; exit 1; }
ferry=$(cd "$(dirname "$ferry")" && pwd)/$(basename "$ferry")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-bench.XXXXXX")
chmod 0777 "$tmp" # GCT's anonymous sessions run as nobody
ferry_pid= gct_pid=
cleanup() {
	[ -n "$ferry_pid" ] && kill -TERM "$ferry_pid" 2>/dev/null
	# GCT forks a process per session; it runs in its own process group.
	[ -n "$gct_pid" ] && kill -KILL -- "-$gct_pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# port FILE PID: waits for "Server listening at HOST:PORT" in FILE.
port() {
	for _ in $(seq 300); do
		if line=$(grep -m1 -o 'Server listening at [^ ]*' "$1" 2>/dev/null); then
			echo "${line##*:}"
			return
		fi
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench: server did not start; its output:" >&2
	cat "$1" "$1.err" >&2
	return 1
}

"$ferry" serve -listen 127.0.0.1:0 -storage null -anonymous -log-level warn \
	>"$tmp/ferry.out" 2>"$tmp/ferry.out.err" &
ferry_pid=$!
fport=$(port "$tmp/ferry.out" "$ferry_pid")

setsid "$gct" -aa -anonymous-user nobody -p 0 -control-interface 127.0.0.1 \
	-data-interface 127.0.0.1 -home-dir "$tmp" -disable-usage-stats \
	>"$tmp/gct.out" 2>"$tmp/gct.out.err" &
gct_pid=$!
gport=$(port "$tmp/gct.out" "$gct_pid")

run_case() { # case output
	case $1 in
	a) "$ferry" cp -q "ftp://127.0.0.1:$fport/1G" "$2" ;;
	b) globus-url-copy -len "$size" "ftp://127.0.0.1:$gport/dev/zero" "$(guc_dest "$2")" ;;
	c) "$ferry" cp -q -len "$size" "ftp://127.0.0.1:$gport/dev/zero" "$2" ;;
	d) globus-url-copy "ftp://127.0.0.1:$fport/1G" "$(guc_dest "$2")" ;;
	esac
}
guc_dest() { if [ "$1" = - ]; then echo -; else echo "file://$1"; fi; }

cases=(a b c d)
declare -A label=(
	[a]="Ferry server, ferry cp"
	[b]="GCT server, globus-url-copy"
	[c]="GCT server, ferry cp"
	[d]="Ferry server, globus-url-copy"
)

# A warm-up run of each case checks that it moves exactly 1 GiB.
for c in "${cases[@]}"; do
	got=$(run_case "$c" - | wc -c)
	if [ "$got" != "$size" ]; then
		echo "bench: case $c (${label[$c]}) moved $got bytes, want $size" >&2
		exit 1
	fi
done

declare -A secs
for r in $(seq "$rounds"); do
	for c in "${cases[@]}"; do
		t0=$(date +%s.%N)
		run_case "$c" /dev/null
		t1=$(date +%s.%N)
		secs[$c]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }') "
		echo "round $r, case $c (${label[$c]}): $(awk -v a="$t0" -v b="$t1" -v n="$size" 'BEGIN { printf "%.2f Gbit/s", n * 8 / (b - a) / 1e9 }')" >&2
	done
done

# gbits case: "median min max" in Gbit/s.
gbits() {
	for s in ${secs[$1]}; do awk -v s="$s" -v n="$size" 'BEGIN { printf "%.4f\n", n * 8 / s / 1e9 }'; done |
		sort -g | awk '{ v[NR] = $1 } END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f %.2f %.2f\n", m, v[1], v[NR]
		}'
}

declare -A med
echo
echo "Stream mode, 1 GiB download over loopback, $rounds runs each ($(nproc) CPUs, $(uname -r))"
echo
echo "| case | server | client | median Gbit/s | min | max |"
echo "|---|---|---|---:|---:|---:|"
for c in "${cases[@]}"; do
	read -r m lo hi < <(gbits "$c")
	med[$c]=$m
	server=${label[$c]%%,*} client=${label[$c]#*, }
	echo "| $c | $server | $client | $m | $lo | $hi |"
done
echo
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "Ferry/GCT (a/b, each with its own client): **$(ratio "${med[a]}" "${med[b]}")**; same client: ferry cp a/c = $(ratio "${med[a]}" "${med[c]}"), globus-url-copy d/b = $(ratio "${med[d]}" "${med[b]}")"
