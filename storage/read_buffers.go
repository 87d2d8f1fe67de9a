package storage

import (
	"math/bits"
	"sync"
)

// Read's buffers come from pools a caller done with one gives back
// (RecycleRead): a leader reads the same log tail once for each of a
// hundred observers catching up, and each read was new garbage.
//
// The pools hold buffers of a power-of-two capacity from
// minReadBuffer to maxReadBuffer, one pool a capacity; a larger read gets
// a buffer of its own, which is not kept.
const (
	minReadBuffer = 4 << 10
	maxReadBuffer = 1 << 20
	readClasses   = 9 // 4 KiB << 0 .. 4 KiB << 8 = 1 MiB
)

var readBuffers [readClasses]sync.Pool // of *[]byte

// readClass is the pool whose buffers hold n bytes (n <= maxReadBuffer).
func readClass(n int) int {
	if n <= minReadBuffer {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(minReadBuffer-1))
}

// takeReadBuffer is a buffer of n bytes, its contents undefined.
func takeReadBuffer(n int) []byte {
	if n > maxReadBuffer {
		return make([]byte, n)
	}
	k := readClass(n)
	if b, ok := readBuffers[k].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, minReadBuffer<<k)
}

// RecycleRead gives back a buffer Read returned, once nothing refers to
// it any more. A buffer that is not one of the pools' sizes is left to
// the garbage collector, so any caller-owned buffer may be passed; one
// still referred to anywhere must never be.
func RecycleRead(b []byte) {
	c := cap(b)
	if c < minReadBuffer || c > maxReadBuffer || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	readBuffers[readClass(c)].Put(&b)
}
