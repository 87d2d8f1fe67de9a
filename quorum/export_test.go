package quorum

// TrackedObservers is how many non-voters the leader n keeps progress for
// (0 when n does not lead), for the observer expiry tests.
func TrackedObservers(n *Node) int {
	if n.lead == nil {
		return 0
	}
	return len(n.lead.progress.observers)
}
