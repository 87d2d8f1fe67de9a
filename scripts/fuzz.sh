#!/usr/bin/env bash
# Runs every fuzz test in the repository (each `func FuzzX` in a _test.go
# file), one after another, for FUZZTIME each (default 30s). Their seed
# corpora already run in `make test`; this searches beyond them. A failure
# leaves its input under the package's testdata/fuzz/FuzzX/, which `make
# test` then replays; the script goes on with the other targets and exits 1
# at the end naming the ones that failed.
#
#   scripts/fuzz.sh        run them all (make fuzz FUZZTIME=5m)
#   scripts/fuzz.sh -n     print the commands without running them
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
dry=false
if [[ ${1:-} == -n ]]; then
	dry=true
fi

# "<package dir> <FuzzName>" for every fuzz test, sorted.
targets=$(grep -rE --include='*_test.go' --exclude-dir=.git --exclude-dir=testdata -o '^func Fuzz[A-Za-z0-9_]*\(' . |
	sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($|\1 \2|' | sort -u)
if [[ -z $targets ]]; then
	echo "fuzz.sh: no fuzz tests found" >&2
	exit 1
fi

failed=()
while read -r dir name; do
	cmd=("$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$dir")
	if $dry; then
		printf '%q ' "${cmd[@]}"
		echo
		continue
	fi
	echo "== $name in $dir for $FUZZTIME"
	if ! "${cmd[@]}"; then
		failed+=("$dir $name")
	fi
done <<<"$targets"

if ((${#failed[@]} > 0)); then
	echo "fuzz.sh: failed: ${failed[*]}" >&2
	exit 1
fi
