package metadata

import (
	"errors"
	"fmt"
)

// Image is what the cluster knows after applying a prefix of the metadata
// log: finalized features, broker and controller registrations, topics and
// their partitions, dynamic configs, the producer-id high-water mark, and
// the security state: ACLs, client quotas, SCRAM credentials and delegation
// tokens (image_security.go).
// Records are applied in log order with Apply; it is plain data with no
// clock and no I/O, so two nodes that apply the same records have images
// with the same Hash.
//
// Records of a metadata transaction (BeginTransactionRecord up to
// EndTransactionRecord) are held back and applied together at the End, or
// dropped at an AbortTransactionRecord, so a reader never sees half of one.
//
// The legacy ZK migration state is not kept: its record is accepted and
// ignored, as Apache 4.x does.
//
// An Image is not safe for concurrent use.
type Image struct {
	// Features maps a feature name (e.g. "metadata.version") to its
	// finalized level. A level of 0 removes the feature.
	Features map[string]int16
	// Brokers holds the registration of every registered broker, kept up
	// to date by the change records (fencing, shutdown, log dirs).
	Brokers map[int32]RegisterBrokerRecord
	// Controllers holds each registered controller's registration.
	Controllers map[int32]RegisterControllerRecord
	// Topics and TopicIDs index the topics by id and by name; a Freeze
	// copy has no TopicIDs.
	Topics   map[Uuid]*Topic
	TopicIDs map[string]Uuid
	// Configs holds the dynamic configs per resource.
	Configs map[ConfigResource]map[string]string
	// ProducerIDs is the latest producer-id block assignment.
	ProducerIDs ProducerIdsRecord
	// ACLs holds the access control entries by id.
	ACLs map[Uuid]AccessControlEntryRecord
	// ClientQuotas maps an entity to its quota values by key; an entity
	// with no quota left is absent. Each entity's map is replaced, never
	// edited, once stored.
	ClientQuotas map[QuotaEntity]map[string]float64
	// Scram holds the SCRAM credentials by user and mechanism.
	Scram map[ScramKey]UserScramCredentialRecord
	// DelegationTokens holds the delegation tokens by token id.
	DelegationTokens map[string]DelegationTokenRecord

	txn     []Record // records of an open metadata transaction
	inTxn   bool
	journal *[]func() // while non-nil, mutations record how to undo themselves
	// brokersGen changes whenever Brokers does, so that callers can cache
	// what they derive from the broker set (BrokersGeneration).
	brokersGen uint64
	group      *changeGroup
	replicas   replicaIndex // broker -> partitions listing it as a replica
	leaderless *leaderlessIndex
	// gen is the generation of topics this image may change in place; a
	// Freeze starts a new one, and a topic of an older generation, shared
	// with a frozen copy, is copied before it changes (ownTopic).
	gen    uint64
	frozen bool // a Freeze result: Apply refuses it
}

// Topic is a topic and its partitions, indexed by partition id. Partitions
// are values in one slice, not pointers in a map: at a million partitions
// that is one allocation per topic and nothing for the GC to chase.
type Topic struct {
	ID         Uuid
	Name       string
	Partitions []Partition
	gen        uint64 // the Image generation that owns it (Image.ownTopic)
}

// Partition is a partition's replica assignment and leadership. Slices are
// never modified in place once stored, so a copy of a Partition is safe to
// keep.
//
// The fields most partitions leave empty (a reassignment's adding and
// removing replicas, known log directories, the ELR) sit behind one
// pointer, read through methods: that makes a Partition 72 bytes instead of
// 184, which at a million partitions is 110 MiB less to allocate, for the
// GC to scan and for a broker failure's changes to pull through the cache.
type Partition struct {
	Replicas            []int32
	Isr                 []int32
	Leader              int32
	LeaderEpoch         int32
	PartitionEpoch      int32
	LeaderRecoveryState int8
	// Exists is false for a slot below the highest partition id that no
	// PartitionRecord has filled (Apache never leaves such holes).
	Exists bool
	extra  *partitionExtra // nil when all of its fields are empty
}

// partitionExtra holds the rarely set fields of a Partition. It is
// replaced, never modified, once stored. Empty lists are kept as nil, so
// that a partition with none of them needs no partitionExtra at all.
type partitionExtra struct {
	removingReplicas       []int32
	addingReplicas         []int32
	directories            []Uuid
	eligibleLeaderReplicas []int32
	lastKnownElr           []int32
}

// RemovingReplicas are the replicas a reassignment is moving away.
func (p Partition) RemovingReplicas() []int32 {
	if p.extra == nil {
		return nil
	}
	return p.extra.removingReplicas
}

// AddingReplicas are the replicas a reassignment is adding.
func (p Partition) AddingReplicas() []int32 {
	if p.extra == nil {
		return nil
	}
	return p.extra.addingReplicas
}

// Directories gives each replica's log directory. Empty means every
// replica's directory is unknown (Apache's MIGRATING id, the zero Uuid);
// it is not expanded, to save 16 bytes per replica.
func (p Partition) Directories() []Uuid {
	if p.extra == nil {
		return nil
	}
	return p.extra.directories
}

// EligibleLeaderReplicas may be elected leader though not in the ISR.
func (p Partition) EligibleLeaderReplicas() []int32 {
	if p.extra == nil {
		return nil
	}
	return p.extra.eligibleLeaderReplicas
}

// LastKnownElr is the last ELR seen before it emptied.
func (p Partition) LastKnownElr() []int32 {
	if p.extra == nil {
		return nil
	}
	return p.extra.lastKnownElr
}

// withExtra returns p with its rare fields set to e, dropping e when all of
// them are empty.
func (p Partition) withExtra(e partitionExtra) Partition {
	e.removingReplicas = nilIfEmpty(e.removingReplicas)
	e.addingReplicas = nilIfEmpty(e.addingReplicas)
	e.directories = migratingIfEmpty(e.directories)
	e.eligibleLeaderReplicas = nilIfEmpty(e.eligibleLeaderReplicas)
	e.lastKnownElr = nilIfEmpty(e.lastKnownElr)
	if e.removingReplicas == nil && e.addingReplicas == nil && e.directories == nil &&
		e.eligibleLeaderReplicas == nil && e.lastKnownElr == nil {
		p.extra = nil
	} else {
		p.extra = &e
	}
	return p
}

func nilIfEmpty(v []int32) []int32 {
	if len(v) == 0 {
		return nil
	}
	return v
}

// ConfigResource names what a ConfigRecord applies to: ResourceType is
// Apache's config resource type (2 topic, 4 broker, 8 broker logger, ...).
type ConfigResource struct {
	ResourceType int8
	Name         string
}

// ErrBadRecord is wrapped by Apply for records that do not fit the image:
// a change to an unknown topic or broker, a duplicate topic, an epoch
// mismatch, a transaction marker out of place. Apache's controller treats
// such a record as a fatal fault in the log.
var ErrBadRecord = errors.New("metadata: record does not apply to the image")

// ErrFrozen is returned by Apply and ApplyAll on an image from Freeze.
var ErrFrozen = errors.New("metadata: the image is a frozen copy")

// NewImage returns an empty image.
func NewImage() *Image {
	return &Image{
		Features:    map[string]int16{},
		Brokers:     map[int32]RegisterBrokerRecord{},
		Controllers: map[int32]RegisterControllerRecord{},
		Topics:      map[Uuid]*Topic{},
		TopicIDs:    map[string]Uuid{},
		Configs:     map[ConfigResource]map[string]string{},
		ProducerIDs: ProducerIdsRecord{BrokerEpoch: -1},

		ACLs:             map[Uuid]AccessControlEntryRecord{},
		ClientQuotas:     map[QuotaEntity]map[string]float64{},
		Scram:            map[ScramKey]UserScramCredentialRecord{},
		DelegationTokens: map[string]DelegationTokenRecord{},
	}
}

// BrokersGeneration is a number that changes whenever Brokers changes; a
// value derived from Brokers stays valid while it is the same on the same
// image.
func (im *Image) BrokersGeneration() uint64 { return im.brokersGen }

// InTransaction reports whether a metadata transaction is open.
func (im *Image) InTransaction() bool { return im.inTxn }

// Apply applies one committed record. Inside a metadata transaction the
// record is held until the transaction ends. On error the image is as it was
// before the record (or, for an EndTransactionRecord, before the whole
// transaction) and the transaction is closed. The image keeps the record's
// slices (replicas, ISR, ...), so the caller must not modify them later.
func (im *Image) Apply(rec Record) error {
	if im.frozen {
		return ErrFrozen
	}
	switch rec.(type) {
	case *BeginTransactionRecord:
		if im.inTxn {
			return im.abortWith(fmt.Errorf("%w: transaction begins inside another", ErrBadRecord))
		}
		im.inTxn = true
		return nil
	case *EndTransactionRecord:
		if !im.inTxn {
			return fmt.Errorf("%w: transaction end without a begin", ErrBadRecord)
		}
		return im.commitTxn()
	case *AbortTransactionRecord:
		if !im.inTxn {
			return fmt.Errorf("%w: transaction abort without a begin", ErrBadRecord)
		}
		im.txn, im.inTxn = nil, false
		return nil
	}
	if im.inTxn {
		im.txn = append(im.txn, rec)
		return nil
	}
	return im.apply(rec)
}

func (im *Image) abortWith(err error) error {
	im.txn, im.inTxn = nil, false
	return err
}

func (im *Image) commitTxn() error {
	recs := im.txn
	im.txn, im.inTxn = nil, false
	return im.applyAtomically(recs)
}

// applyAtomically applies recs in order, undoing all of them if one fails.
func (im *Image) applyAtomically(recs []Record) error {
	var journal []func()
	im.journal = &journal
	defer func() { im.journal = nil }()
	for _, rec := range recs {
		if err := im.apply(rec); err != nil {
			for i := len(journal) - 1; i >= 0; i-- {
				journal[i]()
			}
			return err
		}
	}
	return nil
}

func (im *Image) undo(f func()) {
	if im.journal != nil {
		*im.journal = append(*im.journal, f)
	}
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadRecord}, args...)...)
}

func (im *Image) apply(rec Record) error {
	switch r := rec.(type) {
	case *FeatureLevelRecord:
		im.setFeature(r.Name, r.FeatureLevel)
	case *RegisterBrokerRecord:
		im.putBroker(r.BrokerId, *r)
	case *UnregisterBrokerRecord:
		if _, err := im.broker(r.BrokerId, r.BrokerEpoch, "UnregisterBrokerRecord"); err != nil {
			return err
		}
		im.deleteBroker(r.BrokerId)
	case *FenceBrokerRecord, *UnfenceBrokerRecord, *BrokerRegistrationChangeRecord:
		return im.changeBroker(r)
	case *RegisterControllerRecord:
		im.putController(r.ControllerId, *r)
	case *UnregisterControllerRecord:
		im.deleteController(r.ControllerId)
	case *TopicRecord:
		if _, ok := im.Topics[r.TopicId]; ok {
			return bad("topic id %v already exists", r.TopicId)
		}
		if _, ok := im.TopicIDs[r.Name]; ok {
			return bad("topic %q already exists", r.Name)
		}
		im.putTopic(&Topic{ID: r.TopicId, Name: r.Name, gen: im.gen})
	case *RemoveTopicRecord:
		t, ok := im.Topics[r.TopicId]
		if !ok {
			return bad("RemoveTopicRecord for unknown topic %v", r.TopicId)
		}
		im.removeTopic(t)
	case *PartitionRecord:
		t, ok := im.Topics[r.TopicId]
		if !ok {
			return bad("PartitionRecord for unknown topic %v", r.TopicId)
		}
		if r.PartitionId < 0 {
			return bad("PartitionRecord with partition id %d", r.PartitionId)
		}
		t = im.ownTopic(t)
		im.setPartition(t, r.PartitionId, partitionFromRecord(r))
		im.indexReplicas(t, r.PartitionId, r.Replicas)
		im.noteLeader(t, r.PartitionId, r.Leader)
	case *PartitionChangeRecord:
		return im.changePartition(r)
	case *ConfigRecord:
		im.setConfig(ConfigResource{r.ResourceType, r.ResourceName}, r.Name, r.Value)
	case *ProducerIdsRecord:
		if r.NextProducerId <= im.ProducerIDs.NextProducerId && im.hasProducerIDs() {
			return bad("next producer id %d does not move past %d", r.NextProducerId, im.ProducerIDs.NextProducerId)
		}
		old := im.ProducerIDs
		im.undo(func() { im.ProducerIDs = old })
		im.ProducerIDs = *r
	default:
		return im.applySecurity(rec)
	}
	return nil
}

// hasProducerIDs reports whether a producer-id block was ever assigned. A
// snapshot keeps only the next id (broker id and epoch are -1 there).
func (im *Image) hasProducerIDs() bool {
	return im.ProducerIDs.BrokerEpoch != -1 || im.ProducerIDs.NextProducerId > 0
}
