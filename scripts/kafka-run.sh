#!/usr/bin/env bash
# Runs a Java main class of a fetched Apache Kafka release as the tests do
# (the same JVM launcher, internal/apachekafka), like Apache's
# bin/kafka-run-class.sh:
#
#   scripts/kafka-run.sh [-production] [-heap 4g] <version> <main-class> [args...]
#   scripts/kafka-run.sh 4.1.2 kafka.Kafka server.properties
#   scripts/kafka-run.sh 4.4.0 org.apache.kafka.tools.MetadataQuorumCommand \
#       --bootstrap-controller 127.0.0.1:9093 describe --status
#
# The jars come from $KRAFTD_KAFKA_CACHE/<version>/libs (`make kafka`). A
# server (kafka.Kafka) logs at INFO to stdout, a tool to stderr so that its
# stdout is only its output. The JVM is the quick-start one (serial GC,
# client compiler only; 512 MiB heap for a server, 256 MiB for a tool), or
# with -production G1 and the full JIT; -heap sets -Xmx and $KAFKA_OPTS adds
# JVM options.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec "${GO:-go}" run ./scripts/apache-kafka run "$@"
