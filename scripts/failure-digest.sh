#!/usr/bin/env bash
# failure-digest.sh FILE: after a failed `go test` run whose output is in
# FILE, print each failing test with the last lines it logged before its
# process logs (a failing compat test dumps hundreds of kilobytes of JVM
# logs after its error, and CI pages show only the end of the output).
# Lines from harness_process.go (the dumps) are left out, a panic kept; each line is cut
# to 300 characters. Exits 0: it only reports.
set -uo pipefail
file=${1:?usage: failure-digest.sh FILE}
[ -r "$file" ] || exit 0
awk '
function flush() {
  if (name == "") return
  print name
  for (i = (n > 4 ? n - 3 : 1); i <= n; i++) print "      " substr(last[i], 1, 300)
  name = ""; n = 0
}
/^[[:space:]]*--- FAIL: / { flush(); name = $0; sub(/^[[:space:]]*/, "  ", name); next }
/^[[:space:]]*(--- (PASS|SKIP):|=== (RUN|CONT|PAUSE|NAME)|FAIL|ok |PASS$)/ { flush(); next }
/^panic: / { print "  " substr($0, 1, 300); next }
name != "" && /^[[:space:]]+[A-Za-z0-9_]+\.go:[0-9]+: / && !/harness_process\.go:/ && !/see its first error above/ {
  line = $0; sub(/^[[:space:]]+/, "", line); last[++n] = line
}
END { flush() }
' "$file" | awk 'BEGIN { print "==== failure digest: each failing test and the last lines it logged ====" } { print } END { if (NR == 0) print "(no --- FAIL lines: see the output above)" }'
