#!/usr/bin/env bash
# Fetches Apache Kafka jars with Maven (from Maven Central) into
# $KRAFTD_KAFKA_CACHE/<version>/libs/ for the interop tests in compat/ (the
# kit package fetches the same way, with the same pom, into the same cache).
#
#   scripts/fetch-kafka.sh            # every pinned version
#   scripts/fetch-kafka.sh 4.4.0      # only the versions named
#
# A version whose directory holds the .complete marker is reused; the marker
# is written only after a complete fetch, so an interrupted fetch is redone.
set -euo pipefail

# Pinned versions: the newest patch of each release line in use (3.9 to 4.4)
# that Maven Central serves. Each maps to the log4j2 version that Apache's own
# build of that release uses (3.9 and 4.0 take the 4.1 one: 3.9 shipped
# reload4j, but it logs through slf4j 1.7 like the others).
PINNED=(3.9.2 4.0.2 4.1.2 4.2.2 4.3.1 4.4.0)
log4j_for() {
  case "$1" in
    3.9.* | 4.0.* | 4.1.*) echo 2.24.3 ;;
    *) echo 2.25.3 ;;
  esac
}
# Whether the registry serves that release's kafka-shell (the metadata shell).
shell_for() {
  case "$1" in
    4.2.2 | 4.4.0) echo false ;;
    *) echo true ;;
  esac
}

die() { echo "fetch-kafka: $*" >&2; exit 1; }

command -v java >/dev/null 2>&1 || die "java is missing: install Java 17 or newer (apt-get install openjdk-17-jre-headless)"
command -v mvn >/dev/null 2>&1 || die "mvn is missing: install Apache Maven (apt-get install maven)"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pom="$root/kit/pom.xml"
[[ -f $pom ]] || die "cannot find $pom"
cache=${KRAFTD_KAFKA_CACHE:-$HOME/.cache/kraftd/kafka}

versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=("${PINNED[@]}")

for v in "${versions[@]}"; do
  dir="$cache/$v"
  if [[ -f $dir/.complete ]]; then
    echo "fetch-kafka: Apache Kafka $v already in $dir"
    continue
  fi
  echo "fetch-kafka: fetching Apache Kafka $v with Maven into $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  start=$SECONDS
  # Maven 3.8 prints colour resets even in batch mode; strip them.
  if ! mvn -q -B -Dstyle.color=never -f "$pom" \
      -Dkafka.version="$v" -Dlog4j.version="$(log4j_for "$v")" \
      -Dkafka.shell="$(shell_for "$v")" \
      -Dcompat.build.dir="$dir/build" \
      dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir/libs.tmp" 2>&1 |
      sed -u 's/\x1b\[[0-9;]*m//g'; then
    rm -rf "$dir"
    die "Maven could not fetch Apache Kafka $v (see the output above)"
  fi
  rm -rf "$dir/build"
  ls "$dir/libs.tmp"/kafka_2.13-"$v".jar >/dev/null 2>&1 || die "kafka_2.13-$v.jar missing after the fetch"
  mv "$dir/libs.tmp" "$dir/libs"
  n=$(find "$dir/libs" -name '*.jar' | wc -l)
  printf 'version=%s\njars=%s\n' "$v" "$n" >"$dir/.complete"
  echo "fetch-kafka: Apache Kafka $v: $n jars in $dir/libs ($((SECONDS - start)) s)"
done
