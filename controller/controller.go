package controller

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/metadata"
)

// Controller is the metadata image built from committed records, and the
// blocking face of the active controller. The committed side is fed by
// the node loop (Replay, LoadSnapshot) and read concurrently by request
// handlers, hence mu. The active side is a Core, which runs on the
// goroutine that replays: the blocking methods (wrapper.go) hand it their
// inputs through the Driver given to Serve.
type Controller struct {
	nodeID    int32
	bootstrap []metadata.Record
	// static is the node's server.properties (UseStaticConfig), which its
	// own configuration and the group.* rules are read from.
	static map[string]string

	mu      sync.RWMutex
	image   *metadata.Image
	applied int64 // offset of the last replayed record, -1 before any
	// featuresEpoch is ApiVersions' FinalizedFeaturesEpoch: the last
	// offset of the replay round (a MarkApplied) in which a feature level
	// changed, or of the snapshot loaded, as Apache's FeaturesPublisher
	// takes the image's offset only when its features change; -1 before.
	// featuresMoved says the current round changed one.
	featuresEpoch int64
	featuresMoved bool
	// registerOffsets is the offset of each broker's current
	// RegisterBrokerRecord: a broker is caught up once its metadata
	// offset reaches it.
	registerOffsets map[int32]int64
	// elections counts the unclean and ELR elections replayed (elections.go).
	elections electionCounts
	// watchOwn is set while the core keeps a speculative image: Replay
	// then notes the records that change the image, for the core to cross
	// off its own (pipeline.go); diverged is set once one is not.
	watchOwn  bool
	unchecked []offsetRange
	diverged  bool
	// acls is the committed ACLs indexed for the authorizer, kept by
	// Replay and LoadSnapshot on every node; it has its own lock.
	acls *authz.Index

	// drive runs the blocking methods' inputs on the core's goroutine
	// (Serve); nil until then.
	drive Driver
}

// New returns a controller whose image is empty. bootstrap holds the
// records of bootstrap.checkpoint (feature levels), written by the first
// leader of an empty log.
func New(nodeID int32, bootstrap []metadata.Record) *Controller {
	image := metadata.NewImage()
	image.BuildIndexes() // kept up to date by replay, copied by speculate
	return &Controller{nodeID: nodeID, bootstrap: bootstrap, image: image, applied: -1, featuresEpoch: -1,
		registerOffsets: map[int32]int64{}, acls: authz.NewIndex()}
}

// ACLs is the index of committed ACLs, for the authorizer.
func (c *Controller) ACLs() *authz.Index { return c.acls }

// Replay applies one committed record at offset. A record the image rejects
// is reported but does not stop replay: the log is the truth, and Apache's
// controller likewise logs and skips records it cannot apply.
func (c *Controller) Replay(offset int64, rec metadata.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied = offset
	switch r := rec.(type) {
	case *metadata.RegisterBrokerRecord:
		c.registerOffsets[r.BrokerId] = offset
	case *metadata.FeatureLevelRecord:
		c.featuresEpoch, c.featuresMoved = offset, true
	}
	c.countElection(rec)
	err := c.image.Apply(rec)
	if err == nil {
		c.acls.Apply(rec)
	}
	if c.watchOwn {
		c.noteReplayed(offset, rec, err)
	}
	if err != nil {
		return fmt.Errorf("controller: record at offset %d (%s): %w", offset, metadata.RecordName(rec.Key()), err)
	}
	return nil
}

// MarkApplied records that every record up to offset has been replayed,
// even where the last batches held only control records.
func (c *Controller) MarkApplied(offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if offset > c.applied {
		c.applied = offset
	}
	if c.featuresMoved {
		c.featuresEpoch, c.featuresMoved = c.applied, false
	}
}

// LoadSnapshot replaces the image with a snapshot's, whose last contained
// offset is lastOffset.
func (c *Controller) LoadSnapshot(lastOffset int64, im *metadata.Image) {
	im.BuildIndexes() // before the lock: at a million partitions it takes 0.4 s
	c.mu.Lock()
	defer c.mu.Unlock()
	c.image, c.applied = im, lastOffset
	c.featuresEpoch, c.featuresMoved = lastOffset, false
	c.acls.Load(im)
	if c.watchOwn {
		c.diverged = true // a leader never installs one; but if it did
	}
	// A snapshot does not say where each registration was written; its
	// end is a safe bound for "caught up".
	c.registerOffsets = map[int32]int64{}
	for id := range im.Brokers {
		c.registerOffsets[id] = lastOffset
	}
}

// FreezeImage returns a read-only copy of the committed image (see
// metadata.Image.Freeze) for a snapshot written while replay goes on, if
// the image holds exactly the records up to lastOffset; else nil.
func (c *Controller) FreezeImage(lastOffset int64) *metadata.Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.applied != lastOffset {
		return nil
	}
	return c.image.Freeze()
}

// Applied is the offset of the last replayed record, or -1.
func (c *Controller) Applied() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.applied
}

// Features returns the finalized feature levels and the offset at which
// they last changed (ApiVersions' FinalizedFeaturesEpoch, see
// featuresEpoch): it stays put while other records commit. Before the log
// holds any metadata.version, the bootstrap levels are reported, as Apache
// does.
func (c *Controller) Features() (map[string]int16, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.image.Features[MetadataVersionFeature]; ok {
		return maps.Clone(c.image.Features), c.featuresEpoch
	}
	levels := map[string]int16{}
	for _, rec := range c.bootstrap {
		if f, ok := rec.(*metadata.FeatureLevelRecord); ok {
			levels[f.Name] = f.FeatureLevel
		}
	}
	return levels, -1
}

// RegisteredControllers returns a copy of the controller registrations.
func (c *Controller) RegisteredControllers() map[int32]metadata.RegisterControllerRecord {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.image.Controllers)
}

// ScramCredential is the committed image's SCRAM credential of user for
// mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512). Before the image holds a
// metadata.version, the credentials of the bootstrap records (`format
// --add-scram`) stand in, as the bootstrap feature levels do in Features:
// controllers whose listener asks for SCRAM must authenticate each other's
// Vote requests before any leader has written those records. NB: Apache's
// controllers read credentials only from the published image, so an
// all-Apache quorum over SCRAM cannot elect its first leader (KAFKA-15513).
// After a restart the image is empty until the log is replayed; during
// that window the format-time credentials are the ones honoured.
func (c *Controller) ScramCredential(user string, mechanism int8) (metadata.UserScramCredentialRecord, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.image.Features[MetadataVersionFeature]; ok {
		rec, ok := c.image.Scram[metadata.ScramKey{Name: user, Mechanism: mechanism}]
		return rec, ok
	}
	var found *metadata.UserScramCredentialRecord
	for _, r := range c.bootstrap {
		if rec, ok := r.(*metadata.UserScramCredentialRecord); ok && rec.Name == user && rec.Mechanism == mechanism {
			found = rec // a later duplicate wins, as it would on replay
		}
	}
	if found == nil {
		return metadata.UserScramCredentialRecord{}, false
	}
	return *found, true
}

// PartitionState is one partition as the committed image holds it.
type PartitionState struct {
	TopicID             [16]byte
	Leader, LeaderEpoch int32
	PartitionEpoch      int32
	Replicas, Isr       []int32
}

// Partition returns partition p of topic as of the last replayed record.
func (c *Controller) Partition(topic string, p int32) (PartitionState, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.image.TopicIDs[topic]
	if !ok {
		return PartitionState{}, false
	}
	t := c.image.Topics[id]
	if t == nil || p < 0 || int(p) >= len(t.Partitions) || !t.Partitions[p].Exists {
		return PartitionState{}, false
	}
	part := t.Partitions[p]
	return PartitionState{TopicID: id, Leader: part.Leader, LeaderEpoch: part.LeaderEpoch, PartitionEpoch: part.PartitionEpoch,
		Replicas: slices.Clone(part.Replicas), Isr: slices.Clone(part.Isr)}, true
}

// Hash is the image's deterministic hash, for comparing nodes in tests.
func (c *Controller) Hash() [32]byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.image.Hash()
}

// ActivationRecords are what a newly elected leader writes once it has
// replayed every committed record: the bootstrap feature levels when the log
// has never held a metadata.version, wrapped in a metadata transaction when
// that metadata.version supports one (Apache's ActivationRecordsGenerator).
func (c *Controller) ActivationRecords() []metadata.Record {
	c.mu.RLock()
	_, bootstrapped := c.image.Features[MetadataVersionFeature]
	c.mu.RUnlock()
	if bootstrapped || len(c.bootstrap) == 0 {
		return nil
	}
	mv := int16(0)
	if f, ok := c.bootstrap[0].(*metadata.FeatureLevelRecord); ok && f.Name == MetadataVersionFeature {
		mv = f.FeatureLevel
	}
	records := slices.Clip(c.bootstrap)
	if elrBootstrapped(c.bootstrap) {
		// With ELR on, the cluster must have a cluster-wide
		// min.insync.replicas; Apache writes the broker default (1) with
		// the bootstrap records (4.2's first leader shows it).
		value := "1"
		records = append(records, &metadata.ConfigRecord{ResourceType: resourceTypeBroker, Name: "min.insync.replicas", Value: &value})
	}
	if mv < MVMetadataTransactions {
		return records
	}
	name := "Bootstrap records"
	out := []metadata.Record{&metadata.BeginTransactionRecord{Name: &name}}
	out = append(out, records...)
	return append(out, &metadata.EndTransactionRecord{})
}

// resourceTypeBroker is ConfigResource.Type BROKER; an empty name means
// the cluster-wide default.
const resourceTypeBroker int8 = 4

// elrBootstrapped reports whether the bootstrap records turn ELR on.
func elrBootstrapped(bootstrap []metadata.Record) bool {
	for _, r := range bootstrap {
		if f, ok := r.(*metadata.FeatureLevelRecord); ok && f.Name == ELRFeature && f.FeatureLevel > 0 {
			return true
		}
	}
	return false
}

// bootstrapped reports whether the committed log holds a
// metadata.version, or needs none (no bootstrap records to write).
func (c *Controller) bootstrapped() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.image.Features[MetadataVersionFeature]
	return ok || len(c.bootstrap) == 0
}

// eachBroker calls f for every registered broker of the committed image.
func (c *Controller) eachBroker(f func(id int32, b *metadata.RegisterBrokerRecord)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for id, b := range c.image.Brokers {
		f(id, &b)
	}
}

// registerOffset is the offset of broker id's registration, or the end of
// the committed log when not known.
func (c *Controller) registerOffset(id int32) int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if o, ok := c.registerOffsets[id]; ok {
		return o
	}
	return c.applied
}
