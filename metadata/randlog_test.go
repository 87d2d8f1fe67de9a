package metadata

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// randomLog builds a random but valid metadata log: every record applies to
// the image built by the ones before it (records the image rejects are
// dropped). The metadata.version and the ELR feature are drawn first, and
// nothing is generated that a snapshot at that version could not express,
// so the image it builds survives Records and WriteSnapshot unchanged.
func randomLog(seed uint64, size int) []Record {
	g := &logGen{rnd: rand.New(rand.NewPCG(seed, 0x5eed)), im: NewImage()}
	mvs := []int16{7, 8, 14, 15, 17, 22, 23, 27, 30}
	g.mv = mvs[g.rnd.IntN(len(mvs))]
	g.elr = g.mv >= mvELR && g.rnd.IntN(2) == 0
	g.emit(&FeatureLevelRecord{Name: metadataVersionFeature, FeatureLevel: g.mv})
	if g.elr {
		g.emit(&FeatureLevelRecord{Name: elrFeature, FeatureLevel: 1})
	}
	for len(g.log) < size {
		g.step()
	}
	return g.log
}

type logGen struct {
	rnd     *rand.Rand
	im      *Image
	log     []Record
	mv      int16
	elr     bool
	nextID  byte
	nextPID int64
	inTxn   bool
}

func (g *logGen) emit(r Record) {
	inTxn := g.im.InTransaction()
	err := g.im.Apply(r)
	switch {
	case err == nil:
		g.log = append(g.log, r)
	case inTxn && r.Key() == (&EndTransactionRecord{}).Key():
		// The failed transaction was rolled back and closed, which is what
		// an abort does; log one so that replaying the log agrees.
		g.log = append(g.log, &AbortTransactionRecord{})
	}
}

func (g *logGen) uuid() Uuid {
	var u Uuid
	for i := range u {
		u[i] = byte(g.rnd.UintN(256))
	}
	return u
}

func (g *logGen) replicas() []int32 {
	n := 1 + g.rnd.IntN(3)
	out := make([]int32, n)
	for i, b := range g.rnd.Perm(6)[:n] {
		out[i] = int32(b)
	}
	return out
}

func (g *logGen) subset(of []int32) []int32 {
	out := []int32{}
	for _, r := range of {
		if g.rnd.IntN(3) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func (g *logGen) topicIDs() []Uuid {
	ids := make([]Uuid, 0, len(g.im.Topics))
	for id := range g.im.Topics {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b Uuid) int { return slices.Compare(a[:], b[:]) })
	return ids
}

func (g *logGen) step() {
	switch g.rnd.IntN(16) {
	case 0, 1:
		g.emit(g.broker())
	case 2:
		id := int32(g.rnd.IntN(6))
		if b, ok := g.im.Brokers[id]; ok {
			ch := &BrokerRegistrationChangeRecord{BrokerId: id, BrokerEpoch: b.BrokerEpoch,
				Fenced: int8(g.rnd.IntN(3) - 1), InControlledShutdown: int8(g.rnd.IntN(2))}
			if g.mv >= mvDirectoryAssignment && g.rnd.IntN(2) == 0 {
				ch.LogDirs = []Uuid{g.uuid()}
			}
			g.emit(ch)
		}
	case 3:
		if g.mv >= mvControllerRecords {
			g.emit(&RegisterControllerRecord{ControllerId: int32(3000 + g.rnd.IntN(3)), IncarnationId: g.uuid(),
				ZkMigrationReady: g.rnd.IntN(2) == 0,
				EndPoints:        []RegisterControllerRecordControllerEndpoint{{Name: "CONTROLLER", Host: "h", Port: uint16(9093 + g.rnd.IntN(3))}},
				Features:         []RegisterControllerRecordControllerFeature{{Name: metadataVersionFeature, MinSupportedVersion: 7, MaxSupportedVersion: 27}}})
		}
	case 4, 5:
		g.topic()
	case 6, 7, 8:
		g.partitionChange()
	case 9:
		res := ConfigResource{ResourceType: []int8{2, 4}[g.rnd.IntN(2)], Name: fmt.Sprint("r", g.rnd.IntN(4))}
		var value *string
		if g.rnd.IntN(4) > 0 {
			value = ptr(fmt.Sprint(g.rnd.IntN(1000)))
		}
		g.emit(&ConfigRecord{ResourceType: res.ResourceType, ResourceName: res.Name, Name: fmt.Sprint("k", g.rnd.IntN(3)), Value: value})
	case 10:
		g.nextPID += 1000
		g.emit(&ProducerIdsRecord{BrokerId: int32(g.rnd.IntN(6)), BrokerEpoch: int64(g.rnd.IntN(100)), NextProducerId: g.nextPID})
	case 11:
		if ids := g.topicIDs(); len(ids) > 0 && g.rnd.IntN(3) == 0 {
			g.emit(&RemoveTopicRecord{TopicId: ids[g.rnd.IntN(len(ids))]})
		}
		if id := int32(g.rnd.IntN(6)); g.rnd.IntN(4) == 0 {
			if b, ok := g.im.Brokers[id]; ok {
				g.emit(&UnregisterBrokerRecord{BrokerId: id, BrokerEpoch: b.BrokerEpoch})
			}
		}
	case 12:
		if g.inTxn {
			g.emit([]Record{&EndTransactionRecord{}, &AbortTransactionRecord{}}[g.rnd.IntN(2)])
		} else {
			g.emit(&BeginTransactionRecord{Name: ptr("t")})
		}
		g.inTxn = g.im.InTransaction()
	case 13:
		g.emit(&NoOpRecord{})
		if g.rnd.IntN(3) == 0 {
			g.emit(&FeatureLevelRecord{Name: "group.version", FeatureLevel: int16(g.rnd.IntN(2))})
		}
	case 14, 15:
		g.security()
	}
}

// security emits an ACL, client quota, SCRAM or delegation token record,
// adding or removing. SCRAM and tokens only from the metadata.version whose
// snapshots can hold them. Names come from small pools so that removals and
// overwrites hit existing entries.
func (g *logGen) security() {
	switch g.rnd.IntN(4) {
	case 0:
		ids := sortedACLIDs(g.im.ACLs)
		if len(ids) > 0 && g.rnd.IntN(3) == 0 {
			g.emit(&RemoveAccessControlEntryRecord{Id: ids[g.rnd.IntN(len(ids))]})
			return
		}
		g.emit(&AccessControlEntryRecord{Id: Uuid{0xac, byte(g.rnd.IntN(6))},
			ResourceType: int8(2 + g.rnd.IntN(3)), ResourceName: fmt.Sprint("res", g.rnd.IntN(3)),
			PatternType: int8(3 + g.rnd.IntN(2)), Principal: fmt.Sprint("User:u", g.rnd.IntN(3)),
			Host: "*", Operation: int8(2 + g.rnd.IntN(10)), PermissionType: int8(2 + g.rnd.IntN(2))})
	case 1:
		var entity []ClientQuotaRecordEntityData
		for _, typ := range []string{"user", "client-id", "ip"} {
			switch g.rnd.IntN(3) {
			case 0:
				entity = append(entity, ClientQuotaRecordEntityData{EntityType: typ})
			case 1:
				entity = append(entity, ClientQuotaRecordEntityData{EntityType: typ, EntityName: ptr(fmt.Sprint(typ, g.rnd.IntN(2)))})
			}
		}
		g.rnd.Shuffle(len(entity), func(i, j int) { entity[i], entity[j] = entity[j], entity[i] })
		g.emit(&ClientQuotaRecord{Entity: entity, QuotaKey: fmt.Sprint("k", g.rnd.IntN(3)),
			Value: float64(g.rnd.IntN(1000)) / 8, Remove: g.rnd.IntN(3) == 0})
	case 2:
		if g.mv < mvScram {
			return
		}
		name, mech := fmt.Sprint("u", g.rnd.IntN(3)), int8(1+g.rnd.IntN(2))
		if g.rnd.IntN(3) == 0 {
			g.emit(&RemoveUserScramCredentialRecord{Name: name, Mechanism: mech})
			return
		}
		g.emit(&UserScramCredentialRecord{Name: name, Mechanism: mech, Salt: []byte{byte(g.rnd.IntN(256))},
			StoredKey: []byte("stored"), ServerKey: []byte("server"), Iterations: int32(4096 + g.rnd.IntN(2))})
	case 3:
		if g.mv < mvDelegationTokens {
			return
		}
		id := fmt.Sprint("tok", g.rnd.IntN(3))
		if g.rnd.IntN(3) == 0 {
			g.emit(&RemoveDelegationTokenRecord{TokenId: id})
			return
		}
		tok := &DelegationTokenRecord{Owner: "User:u0", Requester: "User:u1", TokenId: id,
			IssueTimestamp: int64(g.rnd.IntN(1000)), MaxTimestamp: 5000, ExpirationTimestamp: int64(2000 + g.rnd.IntN(1000))}
		if g.rnd.IntN(2) == 0 {
			tok.Renewers = []string{"User:u2"}
		}
		g.emit(tok)
	}
}

func (g *logGen) broker() *RegisterBrokerRecord {
	b := &RegisterBrokerRecord{Version: brokerRecordVersion(g.mv), BrokerId: int32(g.rnd.IntN(6)), IncarnationId: g.uuid(),
		BrokerEpoch: int64(g.rnd.IntN(1000)), Fenced: g.rnd.IntN(2) == 0, InControlledShutdown: g.rnd.IntN(4) == 0,
		EndPoints: []RegisterBrokerRecordBrokerEndpoint{{Name: "PLAINTEXT", Host: "b", Port: uint16(9092 + g.rnd.IntN(10))}},
		Features:  []RegisterBrokerRecordBrokerFeature{{Name: metadataVersionFeature, MinSupportedVersion: 7, MaxSupportedVersion: g.mv}}}
	if g.rnd.IntN(2) == 0 {
		b.Rack = ptr(fmt.Sprint("rack", g.rnd.IntN(3)))
	}
	if g.mv >= mvMigration {
		b.IsMigratingZkBroker = g.rnd.IntN(5) == 0
	}
	if g.mv >= mvDirectoryAssignment {
		b.LogDirs = []Uuid{g.uuid(), g.uuid()}
	}
	if g.mv >= mvCordonedLogDirs && g.rnd.IntN(2) == 0 {
		b.CordonedLogDirs = b.LogDirs[:1]
	}
	return b
}

func (g *logGen) topic() {
	g.nextID++
	id := Uuid{g.nextID, 0x70}
	g.emit(&TopicRecord{Name: fmt.Sprint("topic-", g.nextID), TopicId: id})
	for p := range 1 + g.rnd.IntN(4) {
		if g.rnd.IntN(8) == 0 {
			continue // a hole: Apache never leaves one, but the image allows it
		}
		replicas := g.replicas()
		isr := g.subset(replicas)
		r := &PartitionRecord{Version: partitionRecordVersion(g.mv), PartitionId: int32(p), TopicId: id,
			Replicas: replicas, Isr: isr, Leader: -1, LeaderEpoch: int32(g.rnd.IntN(5)), PartitionEpoch: int32(g.rnd.IntN(5)),
			LeaderRecoveryState: int8(g.rnd.IntN(2))}
		if len(isr) > 0 {
			r.Leader = isr[0]
		}
		if g.rnd.IntN(5) == 0 {
			r.AddingReplicas, r.RemovingReplicas = replicas[:1], replicas[len(replicas)-1:]
		}
		r.Directories = g.directories(len(replicas))
		if g.elr {
			r.EligibleLeaderReplicas, r.LastKnownElr = g.subset(replicas), g.subset(replicas)
		}
		g.emit(r)
	}
}

// directories is nil, all unknown, or known ids, where the version allows.
func (g *logGen) directories(n int) []Uuid {
	if g.mv < mvDirectoryAssignment {
		return nil
	}
	switch g.rnd.IntN(3) {
	case 0:
		return nil
	case 1:
		return make([]Uuid, n)
	}
	dirs := make([]Uuid, n)
	for i := range dirs {
		dirs[i] = g.uuid()
	}
	return dirs
}

func (g *logGen) partitionChange() {
	ids := g.topicIDs()
	if len(ids) == 0 {
		return
	}
	t := g.im.Topics[ids[g.rnd.IntN(len(ids))]]
	if len(t.Partitions) == 0 {
		return
	}
	p := int32(g.rnd.IntN(len(t.Partitions)))
	ch := &PartitionChangeRecord{PartitionId: p, TopicId: t.ID, Leader: -2, LeaderRecoveryState: -1}
	switch g.rnd.IntN(4) {
	case 0:
		ch.Leader = int32(g.rnd.IntN(7)) - 1 // -1: no leader
	case 1:
		ch.Isr = g.subset(t.Partitions[p].Replicas)
	case 2:
		ch.Replicas = g.replicas()
		// New replicas come with their directories (Apache requires as
		// many as replicas once it tracks them).
		if ch.Directories = g.directories(len(ch.Replicas)); ch.Directories == nil && g.mv >= mvDirectoryAssignment {
			ch.Directories = make([]Uuid, len(ch.Replicas))
		}
	case 3:
		if g.elr {
			ch.EligibleLeaderReplicas = g.subset(t.Partitions[p].Replicas)
			ch.LastKnownElr = []int32{}
		}
		ch.LeaderRecoveryState = int8(g.rnd.IntN(2))
	}
	g.emit(ch)
}
