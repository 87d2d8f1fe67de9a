// Package metadata is plain data: the metadata record types of Apache
// Kafka's __cluster_metadata log, the image they build, and snapshots of it
// in Apache's snapshot format.
//
// It must never do network I/O or read the clock, and it must stay cheap at
// millions of partitions.
package metadata
