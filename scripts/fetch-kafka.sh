#!/usr/bin/env bash
# Fetches Apache Kafka jars with Maven (from Maven Central) into
# $KRAFTD_KAFKA_CACHE/<version>/libs/ (default ~/.cache/kraftd/kafka) for
# the interop tests in compat/ and the kit package: kit.FetchKafka for each
# version, through scripts/apache-kafka.
#
#   scripts/fetch-kafka.sh            # every pinned version (internal/apachekafka's Pinned)
#   scripts/fetch-kafka.sh 4.4.0      # only the versions named
#
# A version whose directory holds the .complete marker is reused; the marker
# is written only after a complete fetch, so an interrupted fetch is redone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v java >/dev/null 2>&1 || { echo "fetch-kafka: java is missing: install Java 17 or newer (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
command -v mvn >/dev/null 2>&1 || { echo "fetch-kafka: mvn is missing: install Apache Maven (apt-get install maven)" >&2; exit 1; }
exec "${GO:-go}" run ./scripts/apache-kafka fetch "$@"
