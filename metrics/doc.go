// Package metrics owns what kraftd tells operators about itself over HTTP
// (the kraftd.metrics.listener key): the Prometheus registry and the
// exposition at /metrics (text and OpenMetrics, by client_golang's
// promhttp), the health and readiness answers at /healthz and /readyz,
// and net/http/pprof when kraftd.metrics.pprof.enable asks for it. Its
// listener must never let clients hold more than HTTPLimits allows (a
// connection cap, read, write and idle timeouts), so it cannot starve the
// Kafka listeners of file descriptors or the node of memory.
//
// Metric names are the ones Strimzi's JMX-exporter rules
// (packaging/examples/metrics/kafka-metrics.yaml) give Apache's own
// metrics, so that the dashboards and alerts operators already have work
// unchanged: raft-metrics as kafka_server_raftmetrics_*, the
// KafkaController gauges as kafka_controller_kafkacontroller_*, the
// raft channel as kafka_server_raftchannelmetrics_*. kraftd's own
// histograms, with real buckets, are kraftd_*. docs/metrics.md lists
// every one with its Apache name and meaning.
//
// Nothing here runs on the node's hot path under a lock: the quorum
// runtime tells a Metrics what it measured through node.Meter (atomic
// counters, histograms and windowed statistics), the server through
// server.Meter, and each scrape reads the status the runtime and
// controller publish (Source). The quorum core knows nothing of this
// package.
package metrics
