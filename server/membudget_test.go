package server

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/wiretest"
)

// A frame of any bulk request whose decoded form could take more than the
// whole budget is refused from its size prefix and key, before a byte of
// its body is read or allocated, with a reason naming the setting; a
// bulk frame that fits is still read.
func TestFrameThatCouldDecodeOverTheBudgetIsRefusedBeforeItsBody(t *testing.T) {
	logs := &logBuffer{}
	// Frames up to 20 MiB are read; the budget holds 20 MiB of charge, one
	// frame of 1 MiB.
	_, addr, _ := startServerWith(t, map[string]string{
		"socket.request.max.bytes": "20971520", "queued.max.request.bytes": "20971520"}, logs)
	const over = 20971520/decodeFactor + 1
	keys := make([]int16, 0, len(bulkRequests))
	for k := range bulkRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		for _, size := range []int{over, 20971520} {
			c := wiretest.Dial(t, addr)
			c.Raw(binary.BigEndian.AppendUint32(nil, uint32(size)))
			c.Raw(binary.BigEndian.AppendUint16(nil, uint16(key))) // and nothing more
			if !closedByServer(c, 10*time.Second) {
				t.Fatalf("a %d-byte %s frame was waited for", size, kmsg.NameForKey(key))
			}
			want := fmt.Sprintf("frame of %d bytes for %s (key %d) may decode into up to %d bytes, more than queued.max.request.bytes (20971520)",
				size, kmsg.NameForKey(key), key, size*decodeFactor)
			if !strings.Contains(logs.String(), want) {
				t.Fatalf("the refusal was not logged as %q:\n%s", want, logs.String())
			}
		}
	}
	// One that fits is read (and refused, its body being zeros, for that).
	fits := wiretest.Dial(t, addr)
	body := make([]byte, over-1)
	binary.BigEndian.PutUint16(body, 19)
	fits.Raw(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	fits.Raw(body)
	if !closedByServer(fits, 10*time.Second) {
		t.Fatal("a zero CreateTopics body was not refused")
	}
	if strings.Contains(logs.String(), fmt.Sprintf("frame of %d bytes", len(body))) {
		t.Fatal("a frame that fits the budget was refused for its size")
	}
	if other := wiretest.Dial(t, addr); !other.Answered(1) {
		t.Fatal("another client was not served after the refusals")
	}
}
