package metadata

import (
	"maps"
	"slices"
)

// Clone returns an image with the same contents that can be changed
// independently of im: applying records to one never shows in the other.
//
// It copies what apply edits in place (the maps, the indexes by broker
// and of leaderless partitions) and shares the rest: the topics copy on
// write, as after a Freeze (both images start a generation of their own,
// so each copies a shared topic's partitions the first time it changes
// them: ownTopic), and what apply only ever replaces is shared for good
// (a partition's replica, ISR and rare-field lists, a broker's lists,
// each resource's config map, each entity's quota map, the byte and
// string slices of the security records). So a clone of a million
// partitions costs copies of the maps and indexes, not of the partition
// table: the new active controller makes one on the node's loop as it
// takes over. Clone starts a new generation in im (unless frozen), so it
// needs the same exclusion as Apply.
func (im *Image) Clone() *Image {
	out := &Image{
		Features:    maps.Clone(im.Features),
		Brokers:     maps.Clone(im.Brokers),
		Controllers: maps.Clone(im.Controllers),
		Topics:      maps.Clone(im.Topics),
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
	if !im.frozen { // a frozen image never changes its topics, and others may read it
		im.gen = newGeneration()
	}
	out.gen = newGeneration()
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
