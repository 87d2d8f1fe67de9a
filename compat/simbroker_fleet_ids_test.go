package compat

import (
	"errors"
	"testing"
)

// A fleet whose broker ids include a voter's is refused before it connects:
// its watcher would fetch as that voter and commit records on the leader's
// disk alone (the write TestChaosKraftdQuorum lost).
func TestSimFleetRefusesVoterIDs(t *testing.T) {
	t.Parallel()
	voters := map[int32]string{1: "127.0.0.1:1", 2: "127.0.0.1:1", 3: "127.0.0.1:1"}
	if _, err := StartSimFleet("AAAAAAAAAAAAAAAAAAAAAA", voters, 1, 3); !errors.Is(err, errFleetIDIsVoter) {
		t.Fatalf("fleet with ids 1-3 beside voters 1-3: %v, want errFleetIDIsVoter", err)
	}
	if err := checkFleetIDs(voters, 101, 3); err != nil {
		t.Fatalf("fleet ids 101-103 refused: %v", err)
	}
	if err := checkFleetIDs(voters, 0, 2); !errors.Is(err, errFleetIDIsVoter) {
		t.Fatalf("fleet ids 0-1 beside voter 1: %v", err)
	}
}
