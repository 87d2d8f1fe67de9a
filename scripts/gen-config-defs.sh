#!/usr/bin/env bash
# Writes kafkaconfig/defs/<line>.json for every pinned Apache Kafka release
# (internal/apachekafka's Pinned, which make kafka fetches): the facts of
# that release's KafkaConfig, dumped from its own jars by
# scripts/configdefs/DumpBrokerConfigDefs.java.
#
#   scripts/gen-config-defs.sh            # into kafkaconfig/defs
#   scripts/gen-config-defs.sh DIR        # into DIR (verify-gen.sh compares)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/kafkaconfig/defs}
cache=${KRAFTD_KAFKA_CACHE:-$HOME/.cache/kraftd/kafka}
command -v java >/dev/null 2>&1 || { echo "gen-config-defs: java is missing: install Java 17 or newer (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
mkdir -p "$out"
versions=$(cd "$root" && "${GO:-go}" run ./scripts/apache-kafka versions)
for version in $versions; do
  libs="$cache/$version/libs"
  [[ -f $cache/$version/.complete ]] || { echo "gen-config-defs: Apache Kafka $version is not in $cache: run make kafka" >&2; exit 1; }
  line=${version%.*}
  java -cp "$libs/*" "$root/scripts/configdefs/DumpBrokerConfigDefs.java" >"$out/$line.json" 2>"$out/$line.err" ||
    { cat "$out/$line.err" >&2; exit 1; }
  rm -f "$out/$line.err"
done
