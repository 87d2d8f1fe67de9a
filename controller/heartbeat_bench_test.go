package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkBrokerHeartbeat is the controller's share of a steady fleet's
// heartbeat: one that changes nothing, from one of 1,000 unfenced brokers,
// started in rounds of 100 as a fleet's arrive together; each is answered
// from the image, with no write.
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
	const round = 100
	answers := make([]*Answer[*kmsg.BrokerHeartbeatResponse], 0, round)
	for i := 0; i < b.N; {
		answers = answers[:0]
		for ; i < b.N && len(answers) < round; i++ {
			answers = append(answers, c.StartBrokerHeartbeat(reqs[i%fleet]))
		}
		for _, a := range answers {
			if resp, err := a.Wait(ctx); err != nil || resp.IsFenced {
				b.Fatalf("heartbeat: %v %+v", err, resp)
			}
		}
	}
}
