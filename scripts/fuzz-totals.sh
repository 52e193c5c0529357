#!/usr/bin/env bash
# Prints, per fuzz target of the module, the executions it has had over
# all the runs of a ledger that scripts/fuzz.sh appended to (FUZZ_LEDGER),
# as a Markdown table, least fuzzed first.
#
#   scripts/fuzz-totals.sh LEDGER [GOAL]
#       GOAL   executions each target should have (default 10000000);
#              the last column says whether it has them
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ledger=${1:?usage: scripts/fuzz-totals.sh LEDGER [GOAL]}
goal=${2:-10000000}
mod=$(go list -m)
{
	# Every target of the module, with 0 runs, so that none is missed.
	for dir in $(go list -f '{{.Dir}}' ./...); do
		{ grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null || true; } |
			sed 's/^func //' | while read -r name; do
				pkg=$(go list "$dir")
				printf '%s,%s,0,0,0\n' "${pkg#"$mod"/}" "$name"
			done
	done
	awk -F, 'NR > 1 && $5 ~ /^[0-9]+$/ { print $3 "," $4 ",1," $5 "," $6 }' "$ledger"
} | awk -F, -v goal="$goal" '
	{ k = $1 "," $2; runs[k] += $3; n[k] += $4; s[k] += $5 }
	END {
		for (k in n) {
			split(k, a, ",")
			printf "%d|%s|%s|%d|%d|%d|%s\n", n[k], a[1], a[2], runs[k], n[k], s[k], (n[k] >= goal ? "yes" : "no")
		}
	}' | sort -t'|' -n -k1,1 | {
	echo "| package | target | runs | executions | seconds | ≥ $goal |"
	echo "| --- | --- | ---: | ---: | ---: | --- |"
	cut -d'|' -f2- | sed 's/|/ | /g; s/^/| /; s/$/ |/'
}
