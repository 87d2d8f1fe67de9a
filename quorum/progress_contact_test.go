package quorum

import "testing"

// TestMajorityFetchedAt checks the leader's quorum contact time (Status.
// LeaderContactMs on a leader): the time by which a majority of voters had
// fetched, the leader counting itself at now.
func TestMajorityFetchedAt(t *testing.T) {
	five := VoterSet{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	p := newProgressTracker(1, [16]byte{}, five, 0, 0, 0, 3000)
	if got := p.majorityFetchedAt(100); got != -1 {
		t.Fatalf("before any fetch: %d, want -1", got)
	}
	p.fetched(2, [16]byte{}, 0, 40)
	if got := p.majorityFetchedAt(100); got != -1 {
		t.Fatalf("leader and one voter of five: %d, want -1", got)
	}
	p.fetched(3, [16]byte{}, 0, 70)
	p.fetched(4, [16]byte{}, 0, 90)
	// Times now 100 (self), 90, 70, 40, -1: the third freshest is 70.
	if got := p.majorityFetchedAt(100); got != 70 {
		t.Fatalf("got %d, want 70", got)
	}
	p.fetched(2, [16]byte{}, 0, 95)
	if got := p.majorityFetchedAt(100); got != 90 {
		t.Fatalf("got %d, want 90", got)
	}
	// An observer's fetches count for nothing.
	p.fetched(9, [16]byte{}, 0, 99)
	if got := p.majorityFetchedAt(100); got != 90 {
		t.Fatalf("after an observer fetched: %d, want 90", got)
	}
	// A single voter is always in touch with its quorum.
	solo := newProgressTracker(1, [16]byte{}, VoterSet{{ID: 1}}, 0, 0, 0, 3000)
	if got := solo.majorityFetchedAt(500); got != 500 {
		t.Fatalf("single voter: %d, want 500", got)
	}
}
