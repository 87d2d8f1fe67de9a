package server

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/kraftd/kraftd/internal/wiretest"
)

// Frames announced at a large size and then stalled hold no more than
// queued.max.request.bytes between them, counted at decodeFactor times
// their size: only one of these fits at a time. Small requests still pass.
func TestDecodeBudgetBoundsFramesBeingRead(t *testing.T) {
	s, addr, _ := startServerWith(t, map[string]string{"queued.max.request.bytes": "20971520"}, nil)
	const size = 700 << 10
	var stalled []*wiretest.Conn
	for range 4 {
		c := wiretest.Dial(t, addr)
		c.Raw(binary.BigEndian.AppendUint32(nil, size))
		c.Raw(make([]byte, 100)) // and nothing more
		stalled = append(stalled, c)
	}
	if other := wiretest.Dial(t, addr); !other.Answered(1) {
		t.Fatal("a small request was held up behind stalled large frames")
	}
	// Each stalled frame finishes in turn; each is refused (its body is
	// zeros), which frees the budget for the next.
	for _, c := range stalled {
		c.Raw(make([]byte, size-100))
	}
	for _, c := range stalled {
		if !closedByServer(c, 10*time.Second) {
			t.Fatal("a completed frame was never read")
		}
	}
	if peak := s.decoding.peakHeld(); peak > decodeCharge(size)+decodeCharge(smallFrame) {
		t.Fatalf("%d bytes of decode budget were held at once: more than one stalled frame was read at a time", peak)
	}
}
