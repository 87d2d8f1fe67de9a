package quorum_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/node/nodetest"
)

// A Fetch below v18 does not say which high watermark its sender knows.
// Observer 101 reads a new record before it commits; follower 2 commits it
// before 101's next fetch arrives. That fetch, at the log end, is answered
// at once with the new high watermark instead of waiting out MaxWaitMs
// (Apache parks it: a broker learned of the commit up to 500 ms late in
// the scale benchmark). A fetch after that, which knows it, waits.
func TestFetchBelowV18LearnsAMovedHighWatermarkAtOnce(t *testing.T) {
	h, epoch := threeVoterLeader(t, 7)
	// Commit the epoch's start, so that proposals are taken.
	stepFetch(t, h, epoch, 2, h.Disk().Log.EndOffset(), 0)
	h.Messages()
	start := h.Disk().Log.EndOffset()
	proposeOne(h, "r1")
	process(t, h)
	for h.ReleaseSync() {
		process(t, h)
	}
	end := h.Disk().Log.EndOffset()
	if end <= start {
		t.Fatalf("the proposal was not written: log end %d", end)
	}
	stepFetch(t, h, epoch, 101, start, 500)
	answers := fetchResponses(h, 101)
	if len(answers) != 1 || answers[0].HighWatermark >= end {
		t.Fatalf("observer's fetch of the new record: %+v, want one answer below the high watermark %d", answers, end)
	}
	stepFetch(t, h, epoch, 2, end, 500) // commits the record
	fetchResponses(h, 2)
	if hw := h.Status().HighWatermark; hw != end {
		t.Fatalf("high watermark %d after follower 2 fetched at %d", hw, end)
	}
	stepFetch(t, h, epoch, 101, end, 500)
	answers = fetchResponses(h, 101)
	if len(answers) != 1 || answers[0].HighWatermark != end || len(answers[0].RecordBatches) != 0 {
		t.Fatalf("observer's fetch at the end after the commit: %+v, want an empty answer with high watermark %d at once", answers, end)
	}
	stepFetch(t, h, epoch, 101, end, 500)
	if answers = fetchResponses(h, 101); len(answers) != 0 {
		t.Fatalf("a fetch that knows the high watermark was answered at once: %+v", answers)
	}
}

// fetchResponses returns the partition of each FetchResponse node 1 sent
// to id since the last look at its messages.
func fetchResponses(h *nodetest.Node, id int32) []kmsg.FetchResponseTopicPartition {
	var out []kmsg.FetchResponseTopicPartition
	for _, m := range h.Messages() {
		if resp, ok := m.Response.(*kmsg.FetchResponse); ok && m.To == id {
			out = append(out, resp.Topics[0].Partitions[0])
		}
	}
	return out
}
