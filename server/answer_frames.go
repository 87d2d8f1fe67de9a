package server

import (
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// answerFrames recycle the frames of answers once written. An answer
// encoded by append into nothing grows through every power of two below
// its size, costing about twice its bytes in garbage, and a leader
// answers each observer's Fetch, a hundred of them after every write in
// a catch-up storm, with one.
//
// A frame is taken from the pool of its answer's expected size, so that a
// small answer, which a client that does not read may hold for long,
// never holds a large buffer the memory budget does not count: pool k
// holds buffers of at least minAnswerFrame<<k bytes and less than twice
// that.
var answerFrames [answerFrameClasses]sync.Pool // of *[]byte

const (
	minAnswerFrame     = 512
	answerFrameClasses = 12 // 512 bytes << 11 = 1 MiB
	// maxRecycledFrame bounds the frames kept: a Fetch answer with a log
	// tail for an observer that caught up from a snapshot is within it,
	// and the frames kept are as many as answers were written at once.
	maxRecycledFrame = minAnswerFrame<<answerFrameClasses - 1
)

// answerSize is what the encoding of out is expected to take: the records
// of a Fetch answer and a little, else minAnswerFrame.
func answerSize(out kmsg.Response) int {
	n := minAnswerFrame
	if f, ok := out.(*kmsg.FetchResponse); ok {
		for _, t := range f.Topics {
			for _, p := range t.Partitions {
				n += len(p.RecordBatches)
			}
		}
	}
	return n
}

// newAnswerFrame is an empty frame with room for size bytes.
func newAnswerFrame(size int) *[]byte {
	k := bits.Len(uint(max(size, minAnswerFrame)-1)) - bits.Len(minAnswerFrame-1)
	if k < answerFrameClasses {
		if b, ok := answerFrames[k].Get().(*[]byte); ok {
			*b = (*b)[:0]
			return b
		}
	}
	b := make([]byte, 0, max(size, minAnswerFrame))
	return &b
}

// recycleAnswerFrame takes back a frame nothing refers to any more (the
// connection has written it, or died before), into the pool whose least
// size it holds.
func recycleAnswerFrame(b *[]byte) {
	if b == nil || cap(*b) < minAnswerFrame || cap(*b) > maxRecycledFrame {
		return
	}
	k := bits.Len(uint(cap(*b))) - bits.Len(minAnswerFrame)
	answerFrames[k].Put(b)
}
