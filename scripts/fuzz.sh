#!/usr/bin/env bash
# Runs every fuzz target of the module for a given time each and prints a
# table of executions per target. Found crashes stay in each package's
# testdata/fuzz directory (the corpus), where go test replays them.
#
#   scripts/fuzz.sh [TIME]      TIME per target, as go test -fuzztime takes
#                               it: 30s (default), 10m, or 1000000x
#   FUZZ_ONLY=regexp scripts/fuzz.sh 5m    only the targets whose package
#                               path or name matches
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime=${1:-30s}
only=${FUZZ_ONLY:-.}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# Each target as "package<TAB>FuzzName".
mapfile -t targets < <(
	for dir in $(go list -f '{{.Dir}}' ./...); do
		grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null |
			sed 's/^func //' | while read -r name; do
				printf '%s\t%s\n' "$(go list "$dir")" "$name"
			done
	done | grep -E -- "$only" || true
)
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz target matches $only" >&2
	exit 2
fi

status=0
printf '%-45s %-34s %14s %s\n' package target executions result
for t in "${targets[@]}"; do
	pkg=${t%%$'\t'*}
	name=${t#*$'\t'}
	out="$log/$name.log"
	result=ok
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" >"$out" 2>&1; then
		result="FAILED (see $pkg testdata/fuzz/$name)"
		status=1
		tail -20 "$out" >&2
	fi
	# The last progress line carries the total: "execs: N (…/sec)".
	execs=$(grep -o 'execs: [0-9]*' "$out" | tail -1 | awk '{print $2}')
	printf '%-45s %-34s %14s %s\n' "${pkg#github.com/ferrygrid/ferry/}" "$name" "${execs:-?}" "$result"
done
exit $status
