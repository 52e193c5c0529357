#!/usr/bin/env bash
# Runs every fuzz target of the module, one at a time, and prints a table
# of executions, seconds, new corpus entries and result per target. Found
# crashes stay in each package's testdata/fuzz directory, where go test
# replays them; the generated corpus stays in $(go env GOCACHE)/fuzz.
#
#   scripts/fuzz.sh [TIME [TABLE]]
#       TIME   per target, as go test -fuzztime takes it: 30s (default),
#              10m, or 10000000x (a number of executions)
#       TABLE  a file that receives the table too (Markdown)
#
#   Environment:
#       FUZZ_ONLY=regexp   only the targets whose package path or name
#                          matches
#       FUZZ_PARALLEL=n    fuzzing workers per target (go test -parallel;
#                          default: GOMAXPROCS)
#       FUZZ_SKIP=regexp   leave out the targets whose package path or name
#                          matches
#       FUZZ_GOMAXPROCS=n  threads of each fuzzing process (default 1:
#                          a worker on one thread runs about 1.5 times
#                          the inputs a second; see FuzzCommand)
#       FUZZ_LOGS=dir      keep each target's go test output in dir
#       FUZZ_CAP=duration  stop a target after this wall time even if TIME
#                          is not reached (timeout(1) syntax: 90s, 20m); the
#                          row then says "capped"
#       FUZZ_LEDGER=file   a CSV of every run (date, commit, package, target,
#                          executions, seconds, result), appended to: with
#                          TIME a number of executions (10000000x), each
#                          target runs only what it still lacks of that
#                          number over all the runs in the file, the least
#                          fuzzed first, and one that has it all is left
#                          out (scripts/fuzz-totals.sh prints the totals)
#
#   nice -n 19 scripts/fuzz.sh 10000000x fuzz.md    what docs/fuzzing.md ran
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime=${1:-30s}
table=${2:-/dev/null}
only=${FUZZ_ONLY:-.}
skip=${FUZZ_SKIP:-^$}
if [ -n "${FUZZ_LOGS:-}" ]; then
	log=$FUZZ_LOGS
	mkdir -p "$log"
else
	log=$(mktemp -d)
	trap 'rm -rf "$log"' EXIT
fi

parallel=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then
	parallel=(-parallel "$FUZZ_PARALLEL")
fi
capped=()
if [ -n "${FUZZ_CAP:-}" ]; then
	capped=(timeout -s INT -k 30s "$FUZZ_CAP")
fi

# Each target as "package<TAB>FuzzName".
mapfile -t targets < <(
	for dir in $(go list -f '{{.Dir}}' ./...); do
		grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null |
			sed 's/^func //' | while read -r name; do
				printf '%s\t%s\n' "$(go list "$dir")" "$name"
			done
	done | grep -E -- "$only" | grep -E -v -- "$skip" || true
)
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz target matches $only" >&2
	exit 2
fi

# With a ledger and a goal in executions: what each target has had so far.
ledger=${FUZZ_LEDGER:-}
goal=
declare -A had=()
if [ -n "$ledger" ]; then
	[ -f "$ledger" ] || echo "date,commit,package,target,executions,seconds,result" >"$ledger"
	if [[ $fuzztime =~ ^([0-9]+)x$ ]]; then
		goal=${BASH_REMATCH[1]}
		while IFS=, read -r pkg name n; do
			had[$pkg/$name]=$n
		done < <(awk -F, 'NR > 1 && $5 ~ /^[0-9]+$/ { n[$3 "," $4] += $5 } END { for (k in n) print k "," n[k] }' "$ledger")
		mapfile -t targets < <(
			for t in "${targets[@]}"; do
				pkg=${t%%$'\t'*}
				name=${t#*$'\t'}
				printf '%s\t%s\n' "${had[${pkg#github.com/ferrygrid/ferry/}/$name]:-0}" "$t"
			done | sort -n -s -k1,1 | cut -f2-
		)
	fi
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo -)

row() { # package target execs seconds new result
	printf '| %-28s | %-26s | %12s | %7s | %5s | %s |\n' "$@" | tee -a "$table"
}

status=0
mkdir -p "$(dirname "$table")"
: >"$table"
row package target executions seconds new result
row --- --- ---: ---: ---: ---
for t in "${targets[@]}"; do
	pkg=${t%%$'\t'*}
	name=${t#*$'\t'}
	out="$log/$name.log"
	result=ok
	start=$SECONDS
	rc=0
	ftime=$fuzztime
	if [ -n "$goal" ]; then
		left=$((goal - ${had[${pkg#github.com/ferrygrid/ferry/}/$name]:-0}))
		if [ $left -le 0 ]; then
			row "${pkg#github.com/ferrygrid/ferry/}" "$name" 0 0 0 "has its ${goal} in the ledger"
			continue
		fi
		ftime=${left}x
	fi
	"${capped[@]}" env GOMAXPROCS="${FUZZ_GOMAXPROCS:-1}" go test -run '^$' -fuzz "^${name}\$" -fuzztime "$ftime" -timeout 0 \
		"${parallel[@]}" "$pkg" >"$out" 2>&1 || rc=$?
	if [ $rc -eq 124 ] && [ ${#capped[@]} -gt 0 ]; then
		# timeout(1) stopped it (SIGINT: go test ends the run cleanly).
		result="capped at ${FUZZ_CAP}"
	elif [ $rc -ne 0 ]; then
		found=$(grep -o 'testdata/fuzz/[^ ]*' "$out" | head -1 || true)
		result="FAILED: ${found:-exit status $rc}"
		status=1
		tail -30 "$out" >&2
	fi
	# The last progress line carries the totals: "fuzz: elapsed: 12s,
	# execs: N (…/sec), new interesting: K (total: M)".
	last=$(grep 'fuzz: elapsed:.*execs:' "$out" | tail -1 || true)
	execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' <<<"$last")
	fresh=$(sed -n 's/.*new interesting: \([0-9]*\).*/\1/p' <<<"$last")
	row "${pkg#github.com/ferrygrid/ferry/}" "$name" "${execs:-?}" \
		"$((SECONDS - start))" "${fresh:-?}" "$result"
	if [ -n "$ledger" ]; then
		printf '%s,%s,%s,%s,%s,%s,%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit" \
			"${pkg#github.com/ferrygrid/ferry/}" "$name" "${execs:-?}" "$((SECONDS - start))" "${result//,/;}" >>"$ledger"
	fi
done
exit $status
