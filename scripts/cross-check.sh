#!/usr/bin/env bash
# Cross-compiles kraftd for every platform a release serves and vets the
# whole module for each one but the host (make vet does the host). make test
# runs it in the background beside the suite; `make cross` runs it alone.
# Only cmd/kraftd is linked (to /dev/null): linking is the slow part, and the
# other packages are type-checked by vet, tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64)
host=$($GO env GOOS)/$($GO env GOARCH)
fail=0
for t in "${targets[@]}"; do
  start=$SECONDS
  export GOOS=${t%/*} GOARCH=${t#*/} CGO_ENABLED=0
  if ! $GO build -o /dev/null ./cmd/kraftd; then
    echo "cross-check: $t: go build ./cmd/kraftd failed"; fail=1
  fi
  if [ "$t" != "$host" ] && ! $GO vet ./...; then
    echo "cross-check: $t: go vet ./... failed"; fail=1
  fi
  echo "cross-check: $t: $((SECONDS - start)) s"
done
exit $fail
