package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkBrokerHeartbeat is the controller's share of a steady fleet's
// heartbeat: one that changes nothing, from one of 1,000 unfenced brokers,
// answered at once.
func BenchmarkBrokerHeartbeat(b *testing.B) {
	c, _, _ := newTestController(b, 27)
	const fleet = 1000
	reqs := make([]*kmsg.BrokerHeartbeatRequest, 0, fleet)
	ctx := context.Background()
	for id := int32(1); id <= fleet; id++ {
		reg := registration(id, 1)
		reg.LogDirs = [][16]byte{{0: 0x10, 1: byte(id), 2: byte(id >> 8)}}
		epoch, err := c.RegisterBroker(ctx, reg)
		if err != nil {
			b.Fatal(err)
		}
		req := heartbeat(id, epoch, 1<<62, false, false)
		if resp, err := c.BrokerHeartbeat(ctx, req); err != nil || resp.IsFenced {
			b.Fatalf("unfence %d: %v %+v", id, err, resp)
		}
		reqs = append(reqs, req)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		a := c.StartBrokerHeartbeat(reqs[i%fleet])
		if !a.Ready() {
			b.Fatal("a heartbeat that changes nothing was not answered at once")
		}
	}
}
