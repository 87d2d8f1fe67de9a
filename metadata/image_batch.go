package metadata

// ApplyAll applies recs in order exactly as calling Apply on each would,
// stopping at the first error. It returns how many records were applied
// (the index of the failing record when err is not nil).
//
// It is faster than Apply at scale for runs of PartitionChangeRecords, such
// as the tens of thousands a broker failure writes at a million partitions.
// Applied one at a time, each change waits for a chain of cache misses (the
// topic map, the topic, the partition) before the next can start. ApplyAll
// resolves a group of changes stage by stage instead, and since the lookups
// of different records do not depend on each other, the processor overlaps
// their misses.
func (im *Image) ApplyAll(recs []Record) (int, error) {
	if im.frozen {
		return 0, ErrFrozen
	}
	done := 0
	for done < len(recs) {
		if !im.inTxn {
			n, err := im.applyChangeGroup(recs[done:])
			done += n
			if err != nil {
				return done, err
			}
			if n > 0 {
				continue
			}
		}
		if err := im.Apply(recs[done]); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// changeGroupSize is how many PartitionChangeRecords are resolved together:
// enough to keep many cache misses in flight, few enough that what the
// early stages fetched is still in cache when the last one uses it.
const changeGroupSize = 64

// changeGroup is the scratch space of applyChangeGroup, kept on the image
// so that applying a group allocates nothing. The stages store what they
// load into it, memory the compiler cannot prove dead, so those loads stay.
type changeGroup struct {
	changes  [changeGroupSize]*PartitionChangeRecord
	topics   [changeGroupSize]*Topic
	replicas [changeGroupSize]int
	exists   [changeGroupSize]bool
}

// applyChangeGroup applies the PartitionChangeRecords at the start of recs,
// up to changeGroupSize of them, and returns how many it applied. It
// returns 0 when recs does not start with at least two of them; the caller
// then applies the first record on its own.
func (im *Image) applyChangeGroup(recs []Record) (int, error) {
	if len(recs) < 2 {
		return 0, nil
	}
	if im.group == nil {
		im.group = new(changeGroup)
	}
	g := im.group
	n := 0
	for _, rec := range recs[:min(len(recs), changeGroupSize)] {
		r, ok := rec.(*PartitionChangeRecord)
		if !ok {
			break
		}
		g.changes[n] = r
		n++
	}
	if n < 2 {
		clear(g.changes[:n])
		return 0, nil
	}
	// Changes neither add nor remove topics nor grow partition slices, so
	// what the first two stages find stays valid while the last applies.
	// The first two only warm the cache: the last reads everything afresh,
	// as an earlier change of the group may have changed the partition.
	for k, r := range g.changes[:n] {
		g.topics[k] = im.Topics[r.TopicId]
	}
	for k, r := range g.changes[:n] {
		if t := g.topics[k]; t != nil && r.PartitionId >= 0 && int(r.PartitionId) < len(t.Partitions) {
			// Both ends, as a partition may straddle two cache lines.
			p := &t.Partitions[r.PartitionId]
			g.replicas[k] = len(p.Replicas)
			g.exists[k] = p.Exists
		}
	}
	applied, err := n, error(nil)
	for k, r := range g.changes[:n] {
		if t := g.topics[k]; t != nil {
			err = im.changeTopicPartition(t, r)
		} else {
			err = im.changePartition(r) // reports the unknown topic
		}
		if err != nil {
			applied = k
			break
		}
	}
	// Let go of the records and topics, which may outlive their use.
	clear(g.changes[:n])
	clear(g.topics[:n])
	return applied, err
}
