package metadata

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Feature names and metadata.version levels that decide which record
// versions a snapshot is written at (Apache's ImageWriterOptions and the
// MetadataVersion methods it consults).
const (
	metadataVersionFeature = "metadata.version"
	elrFeature             = "eligible.leader.replicas.version"

	mvMigration           = 8  // 3.4-IV0: RegisterBrokerRecord v2 (IsMigratingZkBroker)
	mvControllerRecords   = 15 // 3.7-IV0: RegisterControllerRecord
	mvDirectoryAssignment = 17 // 3.7-IV2: RegisterBrokerRecord v3, PartitionRecord v1 (directories)
	mvELR                 = 23 // 4.0-IV1: PartitionRecord v2 (ELR fields)
	mvCordonedLogDirs     = 30 // 4.3-IV0: RegisterBrokerRecord v4 (CordonedLogDirs)
)

// ErrUnwritable means the image holds something the records of its
// metadata.version cannot express (such as SCRAM credentials before
// 3.5-IV2), so a snapshot written from it would lose data. Apache's
// ImageWriterOptions loss handler throws in the same cases; a snapshot must
// not be written.
var ErrUnwritable = errors.New("metadata: image cannot be written as records without loss")

// Records returns the records that rebuild the image; see WriteRecords.
func (im *Image) Records() ([]Record, error) {
	var out []Record
	err := im.writeRecords(func(r Record) error {
		out = append(out, r)
		return nil
	}, false, nil)
	return out, err
}

// WriteRecords calls fn with each record that rebuilds the image when
// applied to an empty one, in Apache's snapshot order (MetadataImage.write):
// feature levels with metadata.version first (at record version 0, so any
// reader can learn the version before anything else), brokers, controllers,
// each topic followed by its partitions, configs, client quotas, the
// producer-id block, ACLs, SCRAM credentials and delegation tokens. Record
// versions follow the image's metadata.version as Apache's
// ImageWriterOptions does; ELR fields are written only when
// eligible.leader.replicas.version is at least 1, as in Apache.
//
// To write a million partitions without a million allocations, fn receives
// records that are reused: it must encode or copy a record before it
// returns, and must not keep it. The first error from fn stops the walk and
// is returned. An open metadata transaction is not part of the image and is
// not written.
func (im *Image) WriteRecords(fn func(Record) error) error {
	return im.writeRecords(fn, true, nil)
}

// imageWriter carries the per-version choices through one walk.
type imageWriter struct {
	mv    int16
	elr   bool
	fn    func(Record) error
	reuse bool
	// scratch holds the sorted keys' slices, kept between walks by
	// SnapshotBuffers so that a walk allocates nothing that grows with
	// the image.
	scratch *walkScratch
	config  ConfigRecord
	value   string // config's Value points here

	topic     TopicRecord
	partition PartitionRecord
	dirs      []Uuid // all-MIGRATING directories, reused per partition
}

// walkScratch is the memory a walk sorts keys in.
type walkScratch struct {
	topicIDs  []Uuid
	resources []ConfigResource
	names     []string
}

func (im *Image) writeRecords(fn func(Record) error, reuse bool, scratch *walkScratch) error {
	mv, ok := im.Features[metadataVersionFeature]
	if !ok {
		return fmt.Errorf("%w: the image has no metadata.version", ErrUnwritable)
	}
	if scratch == nil {
		scratch = new(walkScratch)
	}
	w := &imageWriter{mv: mv, elr: im.Features[elrFeature] >= 1, fn: fn, reuse: reuse, scratch: scratch}
	steps := []func(*imageWriter, *Image) error{
		(*imageWriter).features, (*imageWriter).brokers, (*imageWriter).controllers,
		(*imageWriter).topics, (*imageWriter).configs, (*imageWriter).clientQuotas,
		(*imageWriter).producerIDs, (*imageWriter).acls, (*imageWriter).scram,
		(*imageWriter).delegationTokens,
	}
	for _, step := range steps {
		if err := step(w, im); err != nil {
			return err
		}
	}
	return nil
}

func (w *imageWriter) features(im *Image) error {
	if err := w.fn(&FeatureLevelRecord{Name: metadataVersionFeature, FeatureLevel: w.mv}); err != nil {
		return err
	}
	for _, name := range sortedKeys(im.Features) {
		if name == metadataVersionFeature {
			continue
		}
		if err := w.fn(&FeatureLevelRecord{Name: name, FeatureLevel: im.Features[name]}); err != nil {
			return err
		}
	}
	return nil
}

// brokerRecordVersion is MetadataVersion.registerBrokerRecordVersion.
func brokerRecordVersion(mv int16) int16 {
	switch {
	case mv >= mvCordonedLogDirs:
		return 4
	case mv >= mvDirectoryAssignment:
		return 3
	case mv >= mvMigration:
		return 2
	}
	return 1
}

func (w *imageWriter) brokers(im *Image) error {
	version := brokerRecordVersion(w.mv)
	for _, id := range sortedKeys(im.Brokers) {
		b := im.Brokers[id]
		switch {
		case b.IsMigratingZkBroker && version < 2:
			return fmt.Errorf("%w: broker %d is a migrating ZooKeeper broker at metadata.version %d", ErrUnwritable, id, w.mv)
		case len(b.LogDirs) > 0 && version < 3:
			return fmt.Errorf("%w: broker %d has log directories at metadata.version %d", ErrUnwritable, id, w.mv)
		case len(b.CordonedLogDirs) > 0 && version < 4:
			return fmt.Errorf("%w: broker %d has cordoned log directories at metadata.version %d", ErrUnwritable, id, w.mv)
		}
		b.Version = version
		if err := w.fn(&b); err != nil {
			return err
		}
	}
	return nil
}

func (w *imageWriter) controllers(im *Image) error {
	if len(im.Controllers) > 0 && w.mv < mvControllerRecords {
		return fmt.Errorf("%w: controller registrations at metadata.version %d", ErrUnwritable, w.mv)
	}
	for _, id := range sortedKeys(im.Controllers) {
		c := im.Controllers[id]
		c.Version = 0
		if err := w.fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// partitionRecordVersion is MetadataVersion.partitionRecordVersion.
func partitionRecordVersion(mv int16) int16 {
	switch {
	case mv >= mvELR:
		return 2
	case mv >= mvDirectoryAssignment:
		return 1
	}
	return 0
}

func (w *imageWriter) topics(im *Image) error {
	// Apache walks a hash map; any order rebuilds the same image, and a
	// sorted one makes snapshots of equal images equal byte for byte.
	ids := slices.Grow(w.scratch.topicIDs[:0], len(im.Topics))
	for id := range im.Topics {
		ids = append(ids, id)
	}
	w.scratch.topicIDs = ids
	slices.SortFunc(ids, func(a, b Uuid) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		if err := w.topicRecords(im.Topics[id]); err != nil {
			return err
		}
	}
	return nil
}

func (w *imageWriter) topicRecords(t *Topic) error {
	tr := &w.topic
	if !w.reuse {
		tr = new(TopicRecord)
	}
	*tr = TopicRecord{Name: t.Name, TopicId: t.ID}
	if err := w.fn(tr); err != nil {
		return err
	}
	version := partitionRecordVersion(w.mv)
	for i := range t.Partitions {
		p := &t.Partitions[i]
		if !p.Exists {
			continue
		}
		pr := &w.partition
		if !w.reuse {
			pr = new(PartitionRecord)
		}
		*pr = PartitionRecord{
			Version:             version,
			PartitionId:         int32(i),
			TopicId:             t.ID,
			Replicas:            orEmpty(p.Replicas),
			Isr:                 orEmpty(p.Isr),
			RemovingReplicas:    orEmpty(p.RemovingReplicas()),
			AddingReplicas:      orEmpty(p.AddingReplicas()),
			Leader:              p.Leader,
			LeaderRecoveryState: p.LeaderRecoveryState,
			LeaderEpoch:         p.LeaderEpoch,
			PartitionEpoch:      p.PartitionEpoch,
		}
		// Apache sets the ELR fields only when they hold something, and only
		// when ELR is enabled; otherwise they are dropped without complaint.
		if w.elr && len(p.EligibleLeaderReplicas()) > 0 {
			pr.EligibleLeaderReplicas = p.EligibleLeaderReplicas()
		}
		if w.elr && len(p.LastKnownElr()) > 0 {
			pr.LastKnownElr = p.LastKnownElr()
		}
		switch {
		case version >= 1:
			// Apache's registration always has one directory per replica,
			// MIGRATING (the zero id) when unknown, and writes them all.
			pr.Directories = p.Directories()
			if len(pr.Directories) == 0 {
				pr.Directories = w.migrating(len(p.Replicas))
			}
		case len(p.Directories()) > 0:
			return fmt.Errorf("%w: partition %s-%d has directory assignments at metadata.version %d", ErrUnwritable, t.Name, i, w.mv)
		}
		if err := w.fn(pr); err != nil {
			return err
		}
	}
	return nil
}

// migrating returns n zero (MIGRATING) directory ids. With reuse the slice
// is shared between records, which fn may not keep anyway.
func (w *imageWriter) migrating(n int) []Uuid {
	if !w.reuse {
		return make([]Uuid, n)
	}
	if len(w.dirs) < n {
		w.dirs = make([]Uuid, n)
	}
	return w.dirs[:n]
}

func orEmpty(v []int32) []int32 {
	if v == nil {
		return []int32{}
	}
	return v
}

func (w *imageWriter) configs(im *Image) error {
	resources := slices.Grow(w.scratch.resources[:0], len(im.Configs))
	for r := range im.Configs {
		resources = append(resources, r)
	}
	w.scratch.resources = resources
	slices.SortFunc(resources, func(a, b ConfigResource) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.Name, b.Name))
	})
	for _, r := range resources {
		kv := im.Configs[r]
		names := appendSortedKeys(w.scratch.names[:0], kv)
		w.scratch.names = names
		for _, name := range names {
			rec, value := &w.config, &w.value
			if !w.reuse {
				rec, value = new(ConfigRecord), new(string)
			}
			*value = kv[name]
			*rec = ConfigRecord{ResourceType: r.ResourceType, ResourceName: r.Name, Name: name, Value: value}
			if err := w.fn(rec); err != nil {
				return err
			}
		}
		clear(names) // pin no config name until the next walk
	}
	clear(resources)
	return nil
}

// producerIDs writes the next producer id only: Apache's image keeps no
// broker id or epoch for it and writes -1 for both.
func (w *imageWriter) producerIDs(im *Image) error {
	if !im.hasProducerIDs() {
		return nil
	}
	return w.fn(&ProducerIdsRecord{BrokerId: -1, BrokerEpoch: -1, NextProducerId: im.ProducerIDs.NextProducerId})
}
