#!/usr/bin/env bash
# Fetches the Prometheus JMX exporter's Java agent with Maven (from Maven
# Central) into $KRAFTD_KAFKA_CACHE/jmx-exporter/, for the compat test that
# captures the metric names a real Apache controller exposes through it
# (compat/apache_metrics_test.go). 1.0.1 is the newest release Maven Central
# serves; Strimzi's images carry a later 1.x from GitHub, which names
# metrics by the same rules.
set -euo pipefail
version=1.0.1
die() { echo "fetch-jmx-exporter: $*" >&2; exit 1; }
command -v mvn >/dev/null 2>&1 || die "mvn is missing: install Apache Maven (apt-get install maven)"
cache=${KRAFTD_KAFKA_CACHE:-$HOME/.cache/kraftd/kafka}
dir="$cache/jmx-exporter"
if [[ -f $dir/.complete ]]; then
  echo "fetch-jmx-exporter: $version already in $dir"
  exit 0
fi
rm -rf "$dir" && mkdir -p "$dir"
if ! mvn -q -B -Dstyle.color=never dependency:copy \
    -Dartifact=io.prometheus.jmx:jmx_prometheus_javaagent:$version -DoutputDirectory="$dir" 2>&1 |
    sed -u 's/\x1b\[[0-9;]*m//g'; then
  rm -rf "$dir"
  die "Maven could not fetch jmx_prometheus_javaagent $version (see the output above)"
fi
mv "$dir/jmx_prometheus_javaagent-$version.jar" "$dir/jmx_prometheus_javaagent.jar"
printf 'version=%s\n' "$version" >"$dir/.complete"
echo "fetch-jmx-exporter: jmx_prometheus_javaagent $version in $dir"
