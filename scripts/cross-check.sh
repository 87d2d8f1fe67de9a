#!/usr/bin/env bash
# Cross-compiles kraftd for every platform a release serves and vets the
# whole module, tests included, for the other systems (make vet does the
# host). Only cmd/kraftd is linked, to /dev/null. CROSS_VET=all (make cross)
# vets every target; CROSS_VET=per-os (make test, in the background beside
# the suite) vets one architecture of each other system, as the code that
# differs by build tag differs by system, not by architecture: on a cold
# build cache each vetted target compiles every package once more.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64)
host=$($GO env GOOS)/$($GO env GOARCH)
vet=${CROSS_VET:-all}
fail=0
for t in "${targets[@]}"; do
  start=$SECONDS
  export GOOS=${t%/*} GOARCH=${t#*/} CGO_ENABLED=0
  if ! $GO build -o /dev/null ./cmd/kraftd; then
    echo "cross-check: $t: go build ./cmd/kraftd failed"; fail=1
  fi
  vet_this=$([ "$t" != "$host" ] && { [ "$vet" = all ] || [ "$t" = darwin/arm64 ] || [ "$t" = windows/amd64 ]; } && echo y || true)
  if [ -n "$vet_this" ] && ! $GO vet ./...; then
    echo "cross-check: $t: go vet ./... failed"; fail=1
  fi
  echo "cross-check: $t: $((SECONDS - start)) s"
done
exit $fail
