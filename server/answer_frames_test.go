package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A frame comes from the pool of its answer's expected size, so a small
// answer never holds a large recycled buffer; a buffer goes back to the
// pool whose least size it holds.
func TestAnswerFramesBySize(t *testing.T) {
	large := make([]byte, 0, 300<<10)
	recycleAnswerFrame(&large)
	for range 100 {
		b := newAnswerFrame(minAnswerFrame)
		if cap(*b) < minAnswerFrame || cap(*b) >= 2*minAnswerFrame {
			t.Fatalf("a small answer's frame has cap %d", cap(*b))
		}
	}
	for _, size := range []int{1, 512, 513, 4000, 1 << 20} {
		b := newAnswerFrame(size)
		if cap(*b) < size || len(*b) != 0 {
			t.Errorf("newAnswerFrame(%d): len %d cap %d", size, len(*b), cap(*b))
		}
		if size > minAnswerFrame && cap(*b) >= 4*size {
			t.Errorf("newAnswerFrame(%d): cap %d, four times the size or more", size, cap(*b))
		}
		recycleAnswerFrame(b)
	}
	f := kmsg.NewPtrFetchResponse()
	f.Topics = []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{RecordBatches: make([]byte, 10000)}}}}
	if got := answerSize(f); got != 10000+minAnswerFrame {
		t.Errorf("answerSize of a Fetch answer with 10000 bytes of records = %d", got)
	}
}
