package metadata

import (
	"maps"
	"slices"
	"sync/atomic"
)

// Freeze returns a read-only copy of the image as it is now, which another
// goroutine may read (to write a snapshot, say) while this one goes on
// applying records to im.
//
// It is copy-on-write, so that a snapshot of a million partitions does not
// need a second image: the copy has maps of its own but shares every topic
// with im, and im copies a shared topic's partition slice the first time
// it changes it afterwards (ownTopic). Everything else a topic or map
// entry points to is only ever replaced, never edited (see Clone). So
// freezing costs a copy of the maps, and each topic changed while the copy
// lives costs one copy of its partitions. The copy has no TopicIDs: that
// index by name is only for applying records, which a frozen copy refuses,
// and at a hundred thousand topics it would be 5 MB copied on the caller's
// goroutine for every snapshot.
//
// Apply and ApplyAll refuse the copy (ErrFrozen). Freeze itself changes im
// (it starts a new generation), so it needs the same exclusion as Apply.
func (im *Image) Freeze() *Image {
	im.gen = newGeneration()
	return &Image{
		Features:         maps.Clone(im.Features),
		Brokers:          maps.Clone(im.Brokers),
		Controllers:      maps.Clone(im.Controllers),
		Topics:           maps.Clone(im.Topics),
		Configs:          maps.Clone(im.Configs),
		ProducerIDs:      im.ProducerIDs,
		ACLs:             maps.Clone(im.ACLs),
		ClientQuotas:     maps.Clone(im.ClientQuotas),
		Scram:            maps.Clone(im.Scram),
		DelegationTokens: maps.Clone(im.DelegationTokens),
		inTxn:            im.inTxn,
		brokersGen:       im.brokersGen,
		frozen:           true,
	}
}

// generations numbers the images' generations across all images: a Clone
// and its source share topics, and neither may take one of the other's
// generation for its own.
var generations atomic.Uint64

func newGeneration() uint64 { return generations.Add(1) }

// ownTopic returns the version of topic t that im may change in place: t
// itself when it belongs to im's generation, else the copy made the first
// time it was changed since a Freeze (found in Topics, so a caller holding
// the shared t still reaches it), else a new copy.
func (im *Image) ownTopic(t *Topic) *Topic {
	if t.gen == im.gen {
		return t
	}
	if cur := im.Topics[t.ID]; cur != nil && cur.gen == im.gen {
		return cur
	}
	c := &Topic{ID: t.ID, Name: t.Name, Partitions: slices.Clone(t.Partitions), gen: im.gen}
	im.undo(func() { im.Topics[t.ID] = t })
	im.Topics[t.ID] = c
	return c
}
