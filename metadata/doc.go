// Package metadata is plain data: the metadata record types of Apache
// Kafka's __cluster_metadata log, the image they build, and snapshots of it
// in Apache's snapshot format.
//
// It must never do network I/O or read the clock, and it must stay cheap at
// millions of partitions.
//
// # Record types
//
// records_generated.go is written by metadata/gen from one definition file
// per record in metadata/definitions (format in its README.md); run
// `make gen` after editing a definition, and `scripts/verify-gen.sh` fails
// when the generated file is stale. It covers every metadata record of
// Apache Kafka 4.1 at every version, the newer 4.x versions and records
// (RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3,
// UnregisterControllerRecord), and the KRaft control record values
// (LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord,
// KRaftVersionRecord, VotersRecord).
//
// Each record is a struct with a Version, its fields, and UnknownTags, which
// keeps tagged fields this package does not know so that they are written
// back unchanged. AppendTo encodes at Version (all records are flexible:
// compact strings, arrays and bytes, and a tagged-field section where a
// tagged field is written only when it differs from its default); ReadFrom
// decodes at Version, leaving fields the version lacks at their defaults.
// Decoding never panics and never allocates more than the input could hold;
// failures are *DecodeError values such as
// "metadata: PartitionRecord v1: field Replicas: not enough data".
// NewRecord and RecordName map the (non-contiguous) apiKeys to types.
//
// # Framing
//
// EncodeValue and DecodeValue add and check the value frame of metadata
// records (frame version 1, apiKey, version, body; frame.go).
// EncodeControl and DecodeControl handle control records: a 4-byte key
// (version 0, type) and the message value, read at version 0 as Apache does
// (control.go). Record batches themselves belong to storage/batch.
//
// # Image
//
// Image (image.go) is the state built by applying records in log order:
// features, broker and controller registrations, topics and partitions (by
// id and by name; partitions as 72-byte values in a slice per topic, with
// the rarely set reassignment, directory and ELR fields behind one pointer
// and read through methods), configs, the producer-id block, ACLs, client
// quotas, SCRAM credentials and delegation tokens (image_security.go).
// Metadata transactions apply all at once at their EndTransactionRecord or
// not at all. ApplyAll (image_batch.go) applies a slice of records exactly as
// Apply would one by one, but resolves runs of PartitionChangeRecords in
// stages so that their cache misses overlap. PartitionsOfBroker
// (image_brokers.go) lists the partitions whose replicas hold a broker, and
// LeaderlessPartitions (image_leaderless.go) those without a leader, each
// from an index built on first use (or by BuildIndexes) and kept up to
// date by apply. Clone
// (image_clone.go) copies an image to change independently; Freeze
// (image_freeze.go) gives a read-only copy-on-write copy that another
// goroutine may read while apply goes on, for writing a snapshot. Hash
// gives a deterministic digest for
// comparing nodes; it covers what Apache's image keeps, so nil and empty
// replica lists hash alike and the producer-id block hashes by its next id
// only.
//
// # Snapshots
//
// WriteRecords (image_records.go) walks an image as the records that
// rebuild it, in Apache's MetadataImage.write order: metadata.version first
// at record version 0, the other features, brokers, controllers, each topic
// with its partitions, configs, client quotas, the producer-id block, ACLs,
// SCRAM credentials, delegation tokens. Record versions and
// what may be written follow the image's metadata.version as Apache's
// ImageWriterOptions does (RegisterBrokerRecord v1-v4, PartitionRecord
// v0-v2 with a MIGRATING directory per replica from 3.7-IV2, ELR fields
// only when eligible.leader.replicas.version >= 1, SCRAM credentials from
// 3.5-IV2 and delegation tokens from 3.6-IV2). Where the version cannot
// express the image, it fails with ErrUnwritable rather than write a
// snapshot that loses data.
//
// WriteSnapshot streams an image into Apache's snapshot file (header batch
// with KRaftVersion and Voters at kraft.version 1, data batches of at most
// 8 MiB before compression, gzipped when SnapshotOptions.Gzip asks, footer)
// and ReadSnapshot/LoadSnapshot read one back a batch at a
// time (snapshot_stream.go); ReadSnapshotHeader reads only the header
// batch, for the snapshot's timestamp; LoadSnapshot decodes PartitionRecords into a
// reused record with replica lists carved from shared chunks
// (snapshot_load.go). EncodeSnapshotFile and DecodeSnapshotFile
// (snapshotfile.go) do the same for small files held in memory, such as
// bootstrap.checkpoint; both lay out the same bytes. Bootstrap
// (bootstrap.go) is what format leaves for a node's first start:
// EncodeBootstrap and DecodeBootstrap turn it into bootstrap.checkpoint
// and the bootstrap snapshot's bytes and back, which package storage
// writes and reads without looking inside.
package metadata
