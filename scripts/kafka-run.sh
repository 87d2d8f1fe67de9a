#!/usr/bin/env bash
# Runs a Java main class of a fetched Apache Kafka release, like Apache's
# bin/kafka-run-class.sh:
#
#   scripts/kafka-run.sh <version> <main-class> [args...]
#   scripts/kafka-run.sh 4.1.2 kafka.Kafka server.properties
#   scripts/kafka-run.sh 4.4.0 org.apache.kafka.tools.MetadataQuorumCommand \
#       --bootstrap-controller 127.0.0.1:9093 describe --status
#
# The jars come from $KRAFTD_KAFKA_CACHE/<version>/libs (scripts/fetch-kafka.sh,
# `make kafka`). Logging goes to stdout at INFO (compat/log4j2.xml, or
# compat/log4j.properties for 3.x, which logs through reload4j). The heap is
# 512 MiB for the server (kafka.Kafka) and 256 MiB for tools; KAFKA_HEAP_OPTS
# overrides it, and KAFKA_OPTS adds JVM options. Tools log to stderr
# (compat/log4j2-tools.xml) so that their stdout is only their output. The JVM replaces this shell
# (exec), so the caller's PID is the JVM's PID.
set -euo pipefail

die() { echo "kafka-run: $*" >&2; exit 2; }
[[ $# -ge 2 ]] || die "usage: $0 <version> <main-class> [args...]"
version=$1 main=$2
shift 2

command -v java >/dev/null 2>&1 || die "java is missing: install Java 17 or newer (apt-get install openjdk-17-jre-headless)"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${KRAFTD_KAFKA_CACHE:-$HOME/.cache/kraftd/kafka}
libs="$cache/$version/libs"
[[ -f $cache/$version/.complete && -d $libs ]] ||
  die "Apache Kafka $version is not in $cache: run 'make kafka' (scripts/fetch-kafka.sh $version)"

log4j="$root/compat/log4j2-tools.xml"
[[ $main == kafka.Kafka ]] && log4j="$root/compat/log4j2.xml"
# 3.x logs through reload4j (log4j 1), which reads a properties file instead.
log4j1="$root/compat/log4j-tools.properties"
[[ $main == kafka.Kafka ]] && log4j1="$root/compat/log4j.properties"
if [[ -z ${KAFKA_HEAP_OPTS:-} ]]; then
  if [[ $main == kafka.Kafka ]]; then KAFKA_HEAP_OPTS="-Xmx512m"; else KAFKA_HEAP_OPTS="-Xmx256m"; fi
fi
# Small, quick-starting JVMs: the machine has 2 cores and tests run several.
perf="-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=2 -Xss512k -Djava.awt.headless=true"
if [[ $main == kafka.Kafka ]]; then perf="-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:CICompilerCount=2 -Djava.awt.headless=true"; fi

# shellcheck disable=SC2086 # the *_OPTS variables are lists of options
exec java $KAFKA_HEAP_OPTS $perf \
  -Dlog4j2.configurationFile="$log4j" -Dlog4j.configuration="file:$log4j1" \
  ${KAFKA_OPTS:-} -cp "$libs/*" "$main" "$@"
