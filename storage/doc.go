// Package storage writes and reads Apache Kafka's on-disk formats byte for
// byte: the __cluster_metadata-0 segment log with its indexes,
// leader-epoch-checkpoint, partition.metadata, quorum-state, snapshots,
// meta.properties, bootstrap.checkpoint and the directory lock.
//
// All file access goes through the FS interface so tests can crash it. It
// must never report data as written before it is fsynced, and never serve
// bytes after a torn or corrupt batch.
package storage
