// Package storage writes and reads Apache Kafka's on-disk formats byte for
// byte: the __cluster_metadata-0 segment log with its indexes,
// leader-epoch-checkpoint, partition.metadata, quorum-state, snapshots,
// meta.properties and the directory lock.
//
// It owns a node's metadata directory: FormatNodeDir writes what `kraftd
// format` leaves (bootstrap.checkpoint, the bootstrap snapshot
// 00000000000000000000-0000000000.checkpoint with a dynamic quorum's
// KRaftVersion and Voters records, meta.properties last); OpenNodeDir
// checks meta.properties against the node.id, takes the lock, refuses a
// directory that has started but lost its log (LogStartedName,
// ErrLostLog), and opens the bootstrap files, quorum-state and the log
// (NodeDir), noting the first start; CheckDirsBelong refuses a node's log
// directories of different clusters or nodes, or one copied from another,
// as Apache's MetaPropertiesEnsemble does; ListLogFiles lets tools read a
// directory without locking or changing it. The lock (LockDir, OSFS.Lock)
// refuses a directory another kraftd holds (kraftd's flock) or an Apache
// process holds (the fcntl lock of Java's FileChannel.tryLock, which a
// flock does not see on Linux); CheckNotLocked asks the same of a
// directory format is about to write into.
//
// Storage reads and writes records only as bytes: the records inside
// bootstrap.checkpoint, the bootstrap snapshot and snapshots are package
// metadata's to encode and decode (metadata.EncodeBootstrap,
// DecodeBootstrap), and the records of the log the quorum's and the
// controller's. So storage imports no kraftd package but its own
// storage/batch and storage/uuid, which metadata, quorum and everything
// above build on (TestStorageImportsNothingAbove fails otherwise).
//
// All file access goes through the FS interface (OSFS on disk, MemFS in
// tests and the simulator, which can crash and inject errors). Nothing is
// reported as written before it is fsynced: Log.Append only writes,
// Log.Sync makes it durable; small state files are replaced with tmp, fsync,
// rename, fsync of the directory. After a failed write or fsync a Log
// refuses changes until reopened.
//
// Recovery (OpenLog) checks every batch of every segment, as Apache does for
// the metadata log (it opens it with recovery point 0): length, CRC-32C,
// magic, offsets contiguous across batches and segments, epochs never
// decreasing. Unlike Apache it cuts only a torn tail: a bad or partial batch
// in the active (last) segment is cut with everything after it and logged,
// so nothing after a torn write is ever served; a bad batch in an earlier
// segment, which was fsynced whole before the next began, or a segment that
// does not continue the one before, stops the open with a *CorruptLogError
// naming the file and offset, and only LogConfig.TruncateCorrupt cuts it.
// Indexes and the leader epoch cache are derived from the batches and
// rebuilt on open, which is why Sync does not fsync the index files.
//
// Formats, with the Apache class each follows:
//   - NNNNNNNNNNNNNNNNNNNN.log: RecordBatch v2 batches (package batch).
//   - .index / .timeindex: LogSegment, OffsetIndex, TimeIndex (see index.go).
//   - leader-epoch-checkpoint: CheckpointFile, "0\n<count>\n<epoch> <offset>\n...".
//   - partition.metadata: PartitionMetadata.encode, no final newline.
//   - quorum-state: FileQuorumStateStore, compact JSON, no final newline.
//   - <endOffset>-<epoch>.checkpoint: Snapshots, FileRawSnapshotWriter.
//   - meta.properties: MetaProperties via java.util.Properties.store.
//   - kraftd-log-started: kraftd's own, two comment lines; Apache has none.
//
// Not written: Apache's producer-state "<offset>.snapshot" files (the
// metadata log has no producers; Apache rebuilds them when missing), and the
// read-only mode Apache sets on frozen snapshots.
package storage
