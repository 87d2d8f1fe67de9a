package metadata

import (
	"maps"
	"slices"
)

// Clone returns an image with the same contents that can be changed
// independently of im: applying records to one never shows in the other.
//
// It copies what apply edits in place (the maps, each topic and its
// partition slice, the broker index) and shares what apply only ever
// replaces: a partition's replica, ISR and rare-field lists, a broker's
// lists, each resource's config map and each entity's quota map, and the
// byte and string slices of the security records. So a clone costs one
// copy of the partition table, not of everything it points to.
func (im *Image) Clone() *Image {
	out := &Image{
		Features:    maps.Clone(im.Features),
		Brokers:     maps.Clone(im.Brokers),
		Controllers: maps.Clone(im.Controllers),
		Topics:      make(map[Uuid]*Topic, len(im.Topics)),
		TopicIDs:    maps.Clone(im.TopicIDs),
		Configs:     maps.Clone(im.Configs),
		ProducerIDs: im.ProducerIDs,
		txn:         append([]Record(nil), im.txn...),
		inTxn:       im.inTxn,

		ACLs:             maps.Clone(im.ACLs),
		ClientQuotas:     maps.Clone(im.ClientQuotas),
		Scram:            maps.Clone(im.Scram),
		DelegationTokens: maps.Clone(im.DelegationTokens),
	}
	if out.TopicIDs == nil { // a Freeze copy has none: Apply needs it
		out.TopicIDs = make(map[string]Uuid, len(im.Topics))
		for id, t := range im.Topics {
			out.TopicIDs[t.Name] = id
		}
	}
	for id, t := range im.Topics {
		c := *t
		c.gen = out.gen
		// Copied with the old capacity's worth of room dropped: a clone's
		// partitions grow on their own.
		c.Partitions = append([]Partition(nil), t.Partitions...)
		out.Topics[id] = &c
	}
	if im.leaderless != nil {
		out.leaderless = &leaderlessIndex{keys: slices.Clone(im.leaderless.keys), compacted: im.leaderless.compacted}
	}
	if im.replicas != nil {
		out.replicas = make(replicaIndex, len(im.replicas))
		for b, e := range im.replicas {
			out.replicas[b] = &replicaEntries{keys: append([]partitionKey(nil), e.keys...), compacted: e.compacted}
		}
	}
	return out
}
