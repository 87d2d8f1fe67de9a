#!/usr/bin/env bash
# make release VERSION=x.y.z: reproducible, stripped kraftd binaries for
# linux and darwin on amd64 and arm64, as tar.gz archives with SHA256SUMS,
# and the OCI image for linux/amd64 and linux/arm64, all in bin/release/VERSION.
# Reproducible: -trimpath, an empty build id, no cgo, and every timestamp
# (archives, image) is the commit's time (SOURCE_DATE_EPOCH), so the same
# commit and Go toolchain give the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:?VERSION=x.y.z is required}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: VERSION $version is not x.y.z (semantic versioning)" >&2
  exit 2
fi
GO=${GO:-go}
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
out=bin/release/$version
rm -rf "$out"
mkdir -p "$out"
# What `kraftd version` prints (cmd/kraftd/version.go): the version, and
# the commit and its date from git, which are the same on every rebuild.
commit=$(git rev-parse HEAD)
git diff --quiet HEAD || commit="$commit (modified)"
date=$(git log -1 --format=%cI)
ldflags="-s -w -buildid= -X 'main.version=$version' -X 'main.commit=$commit' -X 'main.date=$date'"
# PLATFORMS narrows the binaries (the image needs both linux ones).
for platform in ${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}; do
  os=${platform%/*} arch=${platform#*/}
  name=kraftd-$version-$os-$arch
  mkdir -p "$out/$name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath -ldflags "$ldflags" -o "$out/$name/kraftd" ./cmd/kraftd
  for f in LICENSE NOTICE CHANGELOG.md; do
    if [ -f "$f" ]; then cp "$f" "$out/$name/"; fi
  done
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C "$out" -cf - "$name" | gzip -n -9 > "$out/$name.tar.gz"
  if [ "$os" = linux ]; then cp "$out/$name/kraftd" "$out/kraftd-linux-$arch"; fi
  rm -rf "${out:?}/$name"
done
$GO run ./scripts/image -bin "linux/amd64=$out/kraftd-linux-amd64" -bin "linux/arm64=$out/kraftd-linux-arm64" \
  -oci "$out/oci" -tar "$out/kraftd-$version-oci.tar" -tag "kraftd:$version" -version "$version" -epoch "$epoch"
rm -rf "$out/oci" "$out"/kraftd-linux-amd64 "$out"/kraftd-linux-arm64
(cd "$out" && sha256sum -- *.tar.gz *.tar > SHA256SUMS)
# The notes of this version are CHANGELOG.md's section for it, or, for a
# version not yet given one (a test release), the Unreleased section.
notes() { awk -v v="$1" '/^## /{p = ($2 == v || $2 == "["v"]")} p' CHANGELOG.md; }
notes "$version" > "$out/NOTES.md"
if [ ! -s "$out/NOTES.md" ]; then
  echo "release: CHANGELOG.md has no '## $version' section; the notes are its Unreleased section" >&2
  notes Unreleased > "$out/NOTES.md"
fi
echo "release: $out"
cat "$out/SHA256SUMS"
