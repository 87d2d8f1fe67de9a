package server

import "sync"

// answerFrames recycles the frames of answers once written. An answer
// encoded by append into nothing grows through every power of two below
// its size, costing about twice its bytes in garbage, and a leader
// answers each observer's Fetch, a hundred of them after every write in
// a catch-up storm, with one.
var answerFrames sync.Pool // of *[]byte

// maxRecycledFrame bounds the frames kept: a Fetch answer with a log tail
// for an observer that caught up from a snapshot is within it, and the
// frames kept are as many as answers were being written at once; a larger
// answer is rare.
const maxRecycledFrame = 1 << 20

// newAnswerFrame is an empty frame to encode an answer into.
func newAnswerFrame() *[]byte {
	if b, ok := answerFrames.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, 512)
	return &b
}

// recycleAnswerFrame takes back a frame nothing refers to any more (the
// connection has written it, or died before).
func recycleAnswerFrame(b *[]byte) {
	if b != nil && cap(*b) <= maxRecycledFrame {
		answerFrames.Put(b)
	}
}
