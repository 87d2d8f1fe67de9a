package metadata

import (
	"errors"
	"reflect"
	"testing"
)

var (
	topicFoo = Uuid{0xf0}
	topicBar = Uuid{0xba}
)

// clusterRecords builds a small cluster: metadata.version, two brokers, a
// controller, topic foo with two partitions, a config, producer ids.
func clusterRecords() []Record {
	return []Record{
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27},
		&RegisterBrokerRecord{Version: 3, BrokerId: 1, BrokerEpoch: 10, Fenced: true},
		&RegisterBrokerRecord{Version: 3, BrokerId: 2, BrokerEpoch: 11, Fenced: true},
		&RegisterControllerRecord{ControllerId: 3000},
		&BrokerRegistrationChangeRecord{BrokerId: 1, BrokerEpoch: 10, Fenced: -1},
		&TopicRecord{Name: "foo", TopicId: topicFoo},
		&PartitionRecord{PartitionId: 0, TopicId: topicFoo, Replicas: []int32{1, 2}, Isr: []int32{1, 2}, Leader: 1},
		&PartitionRecord{PartitionId: 1, TopicId: topicFoo, Replicas: []int32{2, 1}, Isr: []int32{2, 1}, Leader: 2},
		&ConfigRecord{ResourceType: 2, ResourceName: "foo", Name: "retention.ms", Value: ptr("1000")},
		&ProducerIdsRecord{BrokerId: 1, BrokerEpoch: 10, NextProducerId: 1000},
	}
}

func applyAll(t *testing.T, im *Image, recs []Record) {
	t.Helper()
	for _, r := range recs {
		if err := im.Apply(r); err != nil {
			t.Fatalf("apply %T: %v", r, err)
		}
	}
}

func TestImageApply(t *testing.T) {
	im := NewImage()
	applyAll(t, im, clusterRecords())
	if im.Features["metadata.version"] != 27 {
		t.Error("metadata.version")
	}
	if im.Brokers[1].Fenced || !im.Brokers[2].Fenced {
		t.Errorf("fencing: %v %v", im.Brokers[1].Fenced, im.Brokers[2].Fenced)
	}
	foo := im.Topics[im.TopicIDs["foo"]]
	if foo == nil || len(foo.Partitions) != 2 || foo.Partitions[1].Leader != 2 {
		t.Fatalf("topic foo: %+v", foo)
	}
	if im.Configs[ConfigResource{2, "foo"}]["retention.ms"] != "1000" {
		t.Error("config")
	}

	// A leader change bumps the leader epoch and the partition epoch; an
	// ISR-only change bumps only the partition epoch.
	applyAll(t, im, []Record{
		&PartitionChangeRecord{PartitionId: 0, TopicId: topicFoo, Leader: 2, LeaderRecoveryState: -1},
		&PartitionChangeRecord{PartitionId: 0, TopicId: topicFoo, Leader: -2, Isr: []int32{2}, LeaderRecoveryState: -1},
	})
	p := foo.Partitions[0]
	// The PartitionRecord left both epochs at 0.
	if p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 2 || !reflect.DeepEqual(p.Isr, []int32{2}) {
		t.Errorf("after changes: %+v", p)
	}

	// Removing the topic drops its configs too.
	applyAll(t, im, []Record{&RemoveTopicRecord{TopicId: topicFoo}})
	if len(im.Topics) != 0 || len(im.TopicIDs) != 0 || len(im.Configs) != 0 {
		t.Errorf("after removal: %v %v %v", im.Topics, im.TopicIDs, im.Configs)
	}
	applyAll(t, im, []Record{&UnregisterBrokerRecord{BrokerId: 2, BrokerEpoch: 11}, &FeatureLevelRecord{Name: "metadata.version"}})
	if _, ok := im.Brokers[2]; ok || len(im.Features) != 0 {
		t.Error("unregister / feature removal")
	}
}

func TestImageRejects(t *testing.T) {
	cases := []Record{
		&PartitionRecord{TopicId: topicBar},
		&PartitionChangeRecord{TopicId: topicFoo, PartitionId: 5, Leader: -2, LeaderRecoveryState: -1},
		&TopicRecord{Name: "foo", TopicId: topicBar},
		&TopicRecord{Name: "other", TopicId: topicFoo},
		&BrokerRegistrationChangeRecord{BrokerId: 1, BrokerEpoch: 9},
		&UnregisterBrokerRecord{BrokerId: 7},
		&ProducerIdsRecord{NextProducerId: 5},
		&EndTransactionRecord{},
		&AbortTransactionRecord{},
	}
	for _, rec := range cases {
		im := NewImage()
		applyAll(t, im, clusterRecords())
		before := im.Hash()
		if err := im.Apply(rec); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%T %+v: got %v", rec, rec, err)
		}
		if im.Hash() != before {
			t.Errorf("%T: a rejected record changed the image", rec)
		}
	}
}

func TestImageTransactions(t *testing.T) {
	im := NewImage()
	applyAll(t, im, clusterRecords())
	base := im.Hash()

	// Records inside a transaction stay invisible until the end...
	applyAll(t, im, []Record{
		&BeginTransactionRecord{Name: ptr("create bar")},
		&TopicRecord{Name: "bar", TopicId: topicBar},
		&PartitionRecord{TopicId: topicBar, Replicas: []int32{1}, Isr: []int32{1}, Leader: 1},
	})
	if !im.InTransaction() || im.Hash() != base || len(im.Topics) != 1 {
		t.Fatal("transaction records became visible early")
	}
	applyAll(t, im, []Record{&EndTransactionRecord{}})
	if im.InTransaction() || im.Topics[topicBar] == nil {
		t.Fatal("transaction did not apply")
	}
	withBar := im.Hash()

	// ...an abort drops them...
	applyAll(t, im, []Record{
		&BeginTransactionRecord{},
		&RemoveTopicRecord{TopicId: topicBar},
		&AbortTransactionRecord{Reason: ptr("test")},
	})
	if im.Hash() != withBar {
		t.Fatal("aborted transaction changed the image")
	}

	// ...and a transaction with a bad record is rolled back whole, growth of
	// a partition slice included.
	err := applyRecords(im,
		&BeginTransactionRecord{},
		&PartitionRecord{PartitionId: 3, TopicId: topicBar, Replicas: []int32{1}},
		&ConfigRecord{ResourceType: 4, ResourceName: "1", Name: "x", Value: ptr("y")},
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 28},
		&RegisterBrokerRecord{BrokerId: 9},
		&TopicRecord{Name: "baz", TopicId: Uuid{0xbb}},
		&RemoveTopicRecord{TopicId: topicFoo},
		&PartitionChangeRecord{TopicId: topicBar, PartitionId: 9, Leader: -2},
		&EndTransactionRecord{},
	)
	if !errors.Is(err, ErrBadRecord) {
		t.Fatalf("got %v", err)
	}
	if im.Hash() != withBar || len(im.Topics[topicBar].Partitions) != 1 || im.InTransaction() {
		t.Fatal("failed transaction was not rolled back")
	}
}

func applyRecords(im *Image, recs ...Record) error {
	for _, r := range recs {
		if err := im.Apply(r); err != nil {
			return err
		}
	}
	return nil
}

// TestImageHashDeterministic: the same records give the same hash on
// different images (maps iterate in random order), and any change in
// content changes it.
func TestImageHashDeterministic(t *testing.T) {
	a, b := NewImage(), NewImage()
	applyAll(t, a, clusterRecords())
	applyAll(t, b, clusterRecords())
	if a.Hash() != b.Hash() {
		t.Fatal("equal images hash differently")
	}
	for i, rec := range []Record{
		&ConfigRecord{ResourceType: 2, ResourceName: "foo", Name: "retention.ms", Value: ptr("1001")},
		&PartitionChangeRecord{TopicId: topicFoo, PartitionId: 1, Leader: -2, LeaderRecoveryState: 1},
		&FeatureLevelRecord{Name: "group.version", FeatureLevel: 1},
		&RegisterControllerRecord{ControllerId: 3001},
		&ProducerIdsRecord{BrokerId: 2, BrokerEpoch: 11, NextProducerId: 2000},
	} {
		c := NewImage()
		applyAll(t, c, clusterRecords())
		applyAll(t, c, []Record{rec})
		if c.Hash() == a.Hash() {
			t.Errorf("change %d did not change the hash", i)
		}
	}
}

// BenchmarkImageMillionPartitions applies a million PartitionRecords (1000
// topics of 1000) and hashes the result.
func BenchmarkImageMillionPartitions(b *testing.B) {
	recs := make([]Record, 0, 1001000)
	for ti := range 1000 {
		id := Uuid{byte(ti >> 8), byte(ti), 1}
		recs = append(recs, &TopicRecord{Name: "t" + itoa(ti), TopicId: id})
		for pi := range 1000 {
			recs = append(recs, &PartitionRecord{PartitionId: int32(pi), TopicId: id,
				Replicas: []int32{1, 2, 3}, Isr: []int32{1, 2, 3}, Leader: 1})
		}
	}
	b.ResetTimer()
	for range b.N {
		im := NewImage()
		for _, r := range recs {
			if err := im.Apply(r); err != nil {
				b.Fatal(err)
			}
		}
		im.Hash()
	}
}
