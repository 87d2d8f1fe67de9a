// Package kafkaconfig owns Apache Kafka's broker and controller configuration
// (KafkaConfig) as each release line 3.9 to 4.4 defines it, and the rules by
// which an Apache node describes its own configuration: DescribeConfigs of
// BROKER <its own id> or of the cluster default, with every key's value in
// Java's string form, its synonyms and their sources.
//
// The definitions (defs/<line>.json) are generated from each release's own
// jars by scripts/gen-config-defs.sh and checked fresh by make gen-check.
// They hold facts only (names, types, defaults, key sets), never Apache's
// documentation text, so a DescribeConfigs answer carries no documentation.
//
// It is also the one place kraftd's defaults live (Default): Apache's,
// from the definitions, and the few kraftd gives itself (defaults.go:
// kraftd's own kraftd.* keys, the authorizer's keys, and the two queue
// keys whose Apache defaults kraftd changes). The configuration parser
// (server.ParseConfig) and the quorum core's zero-valued timings read them
// here.
//
// The package keeps no state and never reads files or the network: callers
// hand it the node's static properties and the dynamic configs from the
// metadata image.
package kafkaconfig
