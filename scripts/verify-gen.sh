#!/usr/bin/env bash
# Fails when metadata/records_generated.go is not what metadata/gen writes from
# metadata/definitions today, or kafkaconfig/defs is not what
# scripts/gen-config-defs.sh dumps from the Apache jars (make kafka). Run by
# `make gen-check` (part of `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"${GO:-go}" run ./metadata/gen -out "$tmp/records_generated.go"
if ! diff -u metadata/records_generated.go "$tmp/records_generated.go" >"$tmp/diff"; then
	head -n 40 "$tmp/diff" >&2
	echo "generated code is stale: run make gen" >&2
	exit 1
fi
"$(dirname "$0")/gen-config-defs.sh" "$tmp/defs"
if ! diff -ru kafkaconfig/defs "$tmp/defs" >"$tmp/diff"; then
	head -n 40 "$tmp/diff" >&2
	echo "kafkaconfig/defs is stale: run make gen" >&2
	exit 1
fi
