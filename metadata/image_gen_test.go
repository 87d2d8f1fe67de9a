package metadata

import "testing"

func TestBrokersGenerationFollowsTheBrokerSet(t *testing.T) {
	im := NewImage()
	mustApply := func(r Record) {
		t.Helper()
		if err := im.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	g0 := im.BrokersGeneration()
	mustApply(&RegisterBrokerRecord{BrokerId: 1, BrokerEpoch: 10, Fenced: true})
	g1 := im.BrokersGeneration()
	if g1 == g0 {
		t.Fatal("registration left the generation unchanged")
	}
	mustApply(&TopicRecord{Name: "t", TopicId: Uuid{1}})
	if im.BrokersGeneration() != g1 {
		t.Fatal("a topic changed the broker generation")
	}
	mustApply(&BrokerRegistrationChangeRecord{BrokerId: 1, BrokerEpoch: 10, Fenced: -1})
	g2 := im.BrokersGeneration()
	if g2 == g1 {
		t.Fatal("unfencing left the generation unchanged")
	}
	mustApply(&UnregisterBrokerRecord{BrokerId: 1, BrokerEpoch: 10})
	if im.BrokersGeneration() == g2 {
		t.Fatal("unregistration left the generation unchanged")
	}
}
