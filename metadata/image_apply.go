package metadata

import (
	"maps"
	"slices"
)

// The mutations of an Image. Inside a transaction each one records its undo
// in the journal, so a failed transaction can be rolled back without copying
// the image. A single record checks everything before it mutates, so it
// needs no journal.

func (im *Image) setFeature(name string, level int16) {
	old, had := im.Features[name]
	im.undo(func() { restore(im.Features, name, old, had) })
	if level == 0 {
		delete(im.Features, name)
		return
	}
	im.Features[name] = level
}

func (im *Image) putBroker(id int32, b RegisterBrokerRecord) {
	old, had := im.Brokers[id]
	im.undo(func() { restore(im.Brokers, id, old, had) })
	im.Brokers[id] = b
	im.brokersGen++
}

func (im *Image) deleteBroker(id int32) {
	old, had := im.Brokers[id]
	im.undo(func() { restore(im.Brokers, id, old, had) })
	delete(im.Brokers, id)
	im.brokersGen++
}

// broker returns the registration of id, checking the record's epoch
// against it as Apache does.
func (im *Image) broker(id int32, epoch int64, what string) (RegisterBrokerRecord, error) {
	b, ok := im.Brokers[id]
	if !ok {
		return b, bad("%s for unregistered broker %d", what, id)
	}
	if b.BrokerEpoch != epoch {
		return b, bad("%s for broker %d epoch %d, registered at epoch %d", what, id, epoch, b.BrokerEpoch)
	}
	return b, nil
}

func (im *Image) changeBroker(rec Record) error {
	var (
		b   RegisterBrokerRecord
		err error
	)
	switch r := rec.(type) {
	case *FenceBrokerRecord:
		if b, err = im.broker(r.Id, r.Epoch, "FenceBrokerRecord"); err == nil {
			b.Fenced = true
		}
	case *UnfenceBrokerRecord:
		if b, err = im.broker(r.Id, r.Epoch, "UnfenceBrokerRecord"); err == nil {
			b.Fenced = false
		}
	case *BrokerRegistrationChangeRecord:
		if b, err = im.broker(r.BrokerId, r.BrokerEpoch, "BrokerRegistrationChangeRecord"); err != nil {
			break
		}
		switch r.Fenced {
		case 1:
			b.Fenced = true
		case -1:
			b.Fenced = false
		case 0:
		default:
			return bad("BrokerRegistrationChangeRecord fenced value %d", r.Fenced)
		}
		switch r.InControlledShutdown {
		case 1:
			b.InControlledShutdown = true
		case 0:
		default:
			return bad("BrokerRegistrationChangeRecord in-controlled-shutdown value %d", r.InControlledShutdown)
		}
		if len(r.LogDirs) > 0 {
			b.LogDirs = r.LogDirs
		}
		if r.CordonedLogDirs != nil {
			b.CordonedLogDirs = r.CordonedLogDirs
		}
	}
	if err != nil {
		return err
	}
	im.putBroker(b.BrokerId, b)
	return nil
}

func (im *Image) putController(id int32, c RegisterControllerRecord) {
	old, had := im.Controllers[id]
	im.undo(func() { restore(im.Controllers, id, old, had) })
	im.Controllers[id] = c
}

func (im *Image) deleteController(id int32) {
	old, had := im.Controllers[id]
	im.undo(func() { restore(im.Controllers, id, old, had) })
	delete(im.Controllers, id)
}

func (im *Image) putTopic(t *Topic) {
	im.undo(func() {
		delete(im.Topics, t.ID)
		delete(im.TopicIDs, t.Name)
	})
	im.Topics[t.ID] = t
	im.TopicIDs[t.Name] = t.ID
}

// removeTopic deletes a topic with its partitions and, as Apache does, its
// topic configs.
func (im *Image) removeTopic(t *Topic) {
	im.undo(func() {
		im.Topics[t.ID] = t
		im.TopicIDs[t.Name] = t.ID
	})
	delete(im.Topics, t.ID)
	delete(im.TopicIDs, t.Name)
	res := ConfigResource{ResourceType: 2, Name: t.Name}
	if old, had := im.Configs[res]; had {
		im.undo(func() { im.Configs[res] = old })
		delete(im.Configs, res)
	}
}

// setPartition stores p as partition id of t, which must be im's own
// (ownTopic). It is the hot path of replay
// (a million partitions at load, tens of thousands of changes when a broker
// fails), so the undo closures, which escape to the heap, are only built
// inside a transaction.
func (im *Image) setPartition(t *Topic, id int32, p Partition) {
	switch old := t.Partitions; {
	case int(id) < len(old):
		if im.journal != nil {
			prev := old[id]
			im.undo(func() { t.Partitions[id] = prev })
		}
	case int(id) < cap(old):
		// Extend in place; slots past the old length may hold data from a
		// rolled-back transaction, so clear the new holes.
		t.Partitions = old[:id+1]
		clear(t.Partitions[len(old):id])
		if im.journal != nil {
			im.undo(func() { t.Partitions = old })
		}
	default:
		grown := make([]Partition, id+1, max(int(id)+1, 2*cap(old)))
		copy(grown, old)
		t.Partitions = grown
		if im.journal != nil {
			im.undo(func() { t.Partitions = old })
		}
	}
	t.Partitions[id] = p
}

// reservePartitions makes room for n partitions in t without changing what
// it holds, so that a loader that knows a topic's partition count fills one
// exact allocation instead of doubling its way there.
func reservePartitions(t *Topic, n int) {
	if n > cap(t.Partitions) {
		grown := make([]Partition, len(t.Partitions), n)
		copy(grown, t.Partitions)
		t.Partitions = grown
	}
}

func partitionFromRecord(r *PartitionRecord) Partition {
	p := Partition{
		Replicas:            r.Replicas,
		Isr:                 r.Isr,
		Leader:              r.Leader,
		LeaderEpoch:         r.LeaderEpoch,
		PartitionEpoch:      r.PartitionEpoch,
		LeaderRecoveryState: r.LeaderRecoveryState,
		Exists:              true,
	}
	return p.withExtra(partitionExtra{
		removingReplicas:       r.RemovingReplicas,
		addingReplicas:         r.AddingReplicas,
		directories:            r.Directories,
		eligibleLeaderReplicas: r.EligibleLeaderReplicas,
		lastKnownElr:           r.LastKnownElr,
	})
}

// migratingIfEmpty keeps directories only when some replica's directory is
// known, so "all unknown" has a single form (nil) and hashes the same.
func migratingIfEmpty(dirs []Uuid) []Uuid {
	for _, d := range dirs {
		if d != (Uuid{}) {
			return dirs
		}
	}
	return nil
}

// changePartition merges a PartitionChangeRecord the way Apache does: each
// present field replaces the old one, a leader change bumps the leader
// epoch, and every change bumps the partition epoch.
func (im *Image) changePartition(r *PartitionChangeRecord) error {
	t, ok := im.Topics[r.TopicId]
	if !ok {
		return bad("PartitionChangeRecord for unknown topic %v", r.TopicId)
	}
	return im.changeTopicPartition(t, r)
}

// changeTopicPartition is changePartition once the topic is found.
func (im *Image) changeTopicPartition(t *Topic, r *PartitionChangeRecord) error {
	t = im.ownTopic(t) // before reading: an earlier change may have copied it
	if r.PartitionId < 0 || int(r.PartitionId) >= len(t.Partitions) || !t.Partitions[r.PartitionId].Exists {
		return bad("PartitionChangeRecord for unknown partition %s-%d", t.Name, r.PartitionId)
	}
	p := t.Partitions[r.PartitionId]
	if r.Replicas != nil {
		p.Replicas = r.Replicas
	}
	if r.Replicas != nil && len(r.Directories) > 0 && len(r.Directories) != len(r.Replicas) {
		return bad("PartitionChangeRecord for %s-%d has %d directories for %d replicas",
			t.Name, r.PartitionId, len(r.Directories), len(r.Replicas))
	}
	if r.Isr != nil {
		p.Isr = r.Isr
	}
	if r.Leader != -2 {
		p.Leader = r.Leader
		p.LeaderEpoch++
	}
	if r.LeaderRecoveryState != -1 {
		p.LeaderRecoveryState = r.LeaderRecoveryState
	}
	if r.Directories != nil || r.RemovingReplicas != nil || r.AddingReplicas != nil ||
		r.EligibleLeaderReplicas != nil || r.LastKnownElr != nil {
		var e partitionExtra
		if p.extra != nil {
			e = *p.extra
		}
		if r.Directories != nil {
			e.directories = r.Directories
		}
		if r.RemovingReplicas != nil {
			e.removingReplicas = r.RemovingReplicas
		}
		if r.AddingReplicas != nil {
			e.addingReplicas = r.AddingReplicas
		}
		if r.EligibleLeaderReplicas != nil {
			e.eligibleLeaderReplicas = r.EligibleLeaderReplicas
		}
		if r.LastKnownElr != nil {
			e.lastKnownElr = r.LastKnownElr
		}
		p = p.withExtra(e)
	}
	p.PartitionEpoch++
	im.setPartition(t, r.PartitionId, p)
	if r.Replicas != nil {
		im.indexReplicas(t, r.PartitionId, r.Replicas)
	}
	if r.Leader != -2 {
		im.noteLeader(t, r.PartitionId, r.Leader)
	}
	return nil
}

// setConfig sets name on res, or deletes it when value is nil. The
// resource's map is replaced, not edited, so undo can restore the old one.
func (im *Image) setConfig(res ConfigResource, name string, value *string) {
	old, had := im.Configs[res]
	im.undo(func() { restore(im.Configs, res, old, had) })
	next := maps.Clone(old)
	if next == nil {
		next = map[string]string{}
	}
	if value == nil {
		delete(next, name)
	} else {
		next[name] = *value
	}
	if len(next) == 0 {
		delete(im.Configs, res)
		return
	}
	im.Configs[res] = next
}

func restore[K comparable, V any](m map[K]V, k K, v V, had bool) {
	if had {
		m[k] = v
	} else {
		delete(m, k)
	}
}

// sortedKeys returns a map's keys in order, for deterministic iteration.
func sortedKeys[K interface{ ~int32 | ~string }, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// appendSortedKeys is sortedKeys into dst's memory: it appends the keys to
// dst and sorts what it appended, for a walk that reuses one slice.
func appendSortedKeys[K interface{ ~int32 | ~string }, V any](dst []K, m map[K]V) []K {
	start := len(dst)
	dst = slices.AppendSeq(slices.Grow(dst, len(m)), maps.Keys(m))
	slices.Sort(dst[start:])
	return dst
}
