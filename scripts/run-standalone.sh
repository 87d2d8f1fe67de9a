#!/usr/bin/env bash
# `make run`: a single-node KRaft quorum on 127.0.0.1:9093 with its data in
# ./data. Formats ./data on first use (fresh cluster id, --standalone), then
# runs kraftd in the foreground; Ctrl-C stops it gracefully.
set -euo pipefail
cd "$(dirname "$0")/.."
data="$PWD/data"
conf="$data/kraftd.properties"
mkdir -p "$data"
if [ ! -f "$conf" ]; then
  cat > "$conf" <<EOC
process.roles=controller
node.id=1
controller.listener.names=CONTROLLER
listeners=CONTROLLER://127.0.0.1:9093
metadata.log.dir=$data/metadata
EOC
fi
if [ ! -f "$data/metadata/meta.properties" ]; then
  cluster_id=$(./bin/kraftd random-uuid)
  ./bin/kraftd format --config "$conf" --cluster-id "$cluster_id" --standalone
fi
cat <<EOM
kraftd: starting a standalone controller on 127.0.0.1:9093 (data in $data).
Ask it how the quorum is (no Java needed):
  bin/kraftd status --bootstrap-controller 127.0.0.1:9093
or with Apache Kafka's tools (README.md, "Apache Kafka's tools"):
  kafka-metadata-quorum.sh --bootstrap-controller 127.0.0.1:9093 describe --status
EOM
exec ./bin/kraftd --log-format console start --config "$conf"
