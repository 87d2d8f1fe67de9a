package controller

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// Log directories (JBOD), from metadata.version 3.7-IV2: a broker registers
// its directories; each replica of a partition records the directory that
// holds it; a broker reports directories that failed in its heartbeats, and
// where it placed replicas the controller left UNASSIGNED with
// AssignReplicasToDirs. The rules are Apache's (ReplicationControlManager
// handleDirectoriesOffline and handleAssignReplicasToDirs).

// reservedDir is Apache's DirectoryId.reserved: the first 100 ids with zero
// high bits, MIGRATING, UNASSIGNED and LOST among them.
func reservedDir(d metadata.Uuid) bool {
	return binary.BigEndian.Uint64(d[:8]) == 0 && binary.BigEndian.Uint64(d[8:]) < 100
}

// dirOnline is Apache's DirectoryId.isOnline against a broker's registered
// (online) directories: a broker registered without any counts every
// directory as online, as do UNASSIGNED and MIGRATING; LOST never is.
func dirOnline(d metadata.Uuid, online []metadata.Uuid) bool {
	switch {
	case len(online) == 0 || d == dirUnassigned || d == dirMigrating:
		return true
	case d == dirLost:
		return false
	}
	return slices.Contains(online, d)
}

// replicaDir is the directory p records for replica r (MIGRATING when the
// partition records none, as Apache reads older records).
func replicaDir(p *metadata.Partition, r int32) metadata.Uuid {
	dirs := p.Directories()
	if i := slices.Index(p.Replicas, r); i >= 0 && i < len(dirs) {
		return dirs[i]
	}
	return dirMigrating
}

// hostsOnline reports whether broker r is registered and p's replica on it
// sits in a directory that is online: Apache's LeaderAcceptor takes no
// leader from a failed directory.
func hostsOnline(im *metadata.Image, p *metadata.Partition, r int32) bool {
	b, ok := im.Brokers[r]
	return ok && dirOnline(replicaDir(p, r), b.LogDirs)
}

// offlineDirRecords handles the directories a heartbeat reports offline
// that the broker's registration still lists: every partition with a
// replica in one of them loses that replica from its ISR and leadership,
// then the registration drops them (BrokerRegistrationChangeRecord v2).
// Directories the broker never registered, or already reported, change
// nothing.
func (c *Core) offlineDirRecords(im *metadata.Image, b metadata.RegisterBrokerRecord, offline [][16]byte) []metadata.Record {
	var failed []metadata.Uuid
	for _, d := range offline {
		if u := metadata.Uuid(d); slices.Contains(b.LogDirs, u) && !slices.Contains(failed, u) {
			failed = append(failed, u)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	id := b.BrokerId
	inFailedDir := func(p *metadata.Partition) bool {
		d := replicaDir(p, id)
		return !reservedDir(d) && slices.Contains(failed, d)
	}
	recs := leaderAndIsrUpdates(im, id, noLeader, noLeader, c.settings, replicaPartitions(im, id), inFailedDir)
	remaining := slices.DeleteFunc(slices.Clone(b.LogDirs), func(d metadata.Uuid) bool { return slices.Contains(failed, d) })
	slices.SortFunc(remaining, compareUuid)
	change := &metadata.BrokerRegistrationChangeRecord{BrokerId: id, BrokerEpoch: b.BrokerEpoch, LogDirs: remaining}
	change.SetVersion(2) // as Apache writes it, whatever the metadata.version
	return append(recs, change)
}

// AssignReplicasToDirs records in which directory a broker placed replicas
// (key 73, sent by a broker with several log directories for replicas the
// controller left UNASSIGNED). A replica assigned to a directory that is
// not online leaves its partition's ISR and leadership, as if reported
// offline. The answer mirrors the request with an error per partition.
func (c *Core) AssignReplicasToDirs(now time.Time, req *kmsg.AssignReplicasToDirsRequest, answer func(*kmsg.AssignReplicasToDirsResponse, error)) {
	resp := req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		if metadataVersion(im) < MVDirectoryAssignment {
			return nil, apiErr(kerr.UnsupportedVersion.Code, "Directory assignment is not supported yet.")
		}
		b, ok := im.Brokers[req.BrokerID]
		if !ok {
			return nil, apiErr(kerr.StaleBrokerEpoch.Code, "No broker registration found for broker id %d", req.BrokerID)
		}
		if b.BrokerEpoch != req.BrokerEpoch {
			return nil, apiErr(kerr.StaleBrokerEpoch.Code, "Expected broker epoch %d, but got broker epoch %d", b.BrokerEpoch, req.BrokerEpoch)
		}
		resp.Directories = nil
		var recs []metadata.Record
		var toOffline []metadata.TopicPartition
		for _, rd := range req.Directories {
			dir := metadata.Uuid(rd.ID)
			outDir := kmsg.AssignReplicasToDirsResponseDirectory{ID: rd.ID}
			for _, rt := range rd.Topics {
				outTopic := kmsg.AssignReplicasToDirsResponseDirectoryTopic{TopicID: rt.TopicID}
				t := im.Topics[metadata.Uuid(rt.TopicID)]
				for _, rp := range rt.Partitions {
					code, rec := assignReplicaDir(im, t, rp.Partition, req.BrokerID, dir)
					outTopic.Partitions = append(outTopic.Partitions, kmsg.AssignReplicasToDirsResponseDirectoryTopicPartition{Partition: rp.Partition, ErrorCode: code})
					if rec != nil {
						recs = append(recs, rec)
					}
					if code == 0 && !dirOnline(dir, b.LogDirs) {
						toOffline = append(toOffline, metadata.TopicPartition{Topic: t, Partition: rp.Partition})
					}
				}
				outDir.Topics = append(outDir.Topics, outTopic)
			}
			resp.Directories = append(resp.Directories, outDir)
		}
		recs = append(recs, leaderAndIsrUpdates(im, req.BrokerID, noLeader, noLeader, c.settings, slices.Values(toOffline), anyPartition)...)
		return recs, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

// assignReplicaDir validates one assignment and returns the record that
// makes it, nil when the partition already says so.
func assignReplicaDir(im *metadata.Image, t *metadata.Topic, partition, broker int32, dir metadata.Uuid) (int16, metadata.Record) {
	switch {
	case t == nil:
		return kerr.UnknownTopicID.Code, nil
	case partition < 0 || int(partition) >= len(t.Partitions) || !t.Partitions[partition].Exists:
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	p := &t.Partitions[partition]
	i := slices.Index(p.Replicas, broker)
	if i < 0 {
		return kerr.NotLeaderForPartition.Code, nil
	}
	dirs := slices.Clone(p.Directories())
	if len(dirs) != len(p.Replicas) {
		dirs = defaultDirs(im, p.Replicas)
	}
	if dirs[i] == dir && len(p.Directories()) == len(dirs) {
		return 0, nil
	}
	dirs[i] = dir
	rec := &metadata.PartitionChangeRecord{}
	rec.Default()
	rec.SetVersion(partitionRecordVersion(metadataVersion(im)))
	rec.TopicId, rec.PartitionId, rec.Directories = t.ID, partition, dirs
	return 0, rec
}

func anyPartition(*metadata.Partition) bool { return true }
