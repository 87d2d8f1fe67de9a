package failover

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/kit"
)

const topic = "orders"

// Three Apache Kafka 4.4.0 brokers on three kraftd controllers. A producer
// (acks=all) and a consumer group run; the broker leading the partition is
// SIGKILLed halfway; the producer goes on to the new leader and the
// consumer reads every record the producer had acknowledged, in order.
func TestClientCarriesOnWhenTheLeaderDies(t *testing.T) {
	cluster := kit.StartT(t, kit.Spec{
		Brokers: 3,
		Kafka:   "4.4.0",
		// Fence a dead broker after 4 s instead of Apache's 9 s, so that
		// the partition gets its new leader sooner.
		ControllerConfig: map[string]string{"broker.session.timeout.ms": "4000"},
		BrokerConfig:     map[string]string{"broker.heartbeat.interval.ms": "1000"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.Bootstrap()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	createTopic(ctx, t, producer)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(cluster.Bootstrap()...), kgo.ConsumerGroup("example"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	const total = 40
	for i := range total {
		if i == total/2 {
			leader := leaderOf(ctx, t, producer)
			t.Logf("record %d: SIGKILL broker %d, the partition's leader", i, leader)
			cluster.Node(leader).Kill()
		}
		value := strconv.Itoa(i)
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("produce record %d: %v", i, err)
		}
	}
	t.Logf("all %d records acknowledged; the partition's leader is now broker %d", total, leaderOf(ctx, t, producer))

	for next := 0; next < total; {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume after record %d: %v", next, ctx.Err())
		}
		// The client retries on its own: the group's coordinator may have
		// been the broker killed, and a fetch then tells what it met.
		fetches.EachError(func(topic string, p int32, err error) {
			t.Logf("the consumer carries on past: %v", err)
		})
		for _, r := range fetches.Records() {
			if string(r.Value) != strconv.Itoa(next) {
				t.Fatalf("read %q at offset %d, want %d", r.Value, r.Offset, next)
			}
			next++
		}
	}
	t.Logf("the consumer read all %d records back in order", total)
}

// createTopic makes the topic: one partition on all three brokers, and an
// acknowledged record on at least two of them.
func createTopic(ctx context.Context, t *testing.T, cl *kgo.Client) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 3
	minISR := kmsg.NewCreateTopicsRequestTopicConfig()
	minISR.Name, minISR.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, minISR)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// leaderOf asks the cluster which broker leads the topic's partition,
// until one does.
func leaderOf(ctx context.Context, t *testing.T, cl *kgo.Client) int32 {
	t.Helper()
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 && resp.Topics[0].Partitions[0].Leader >= 0 {
			return resp.Topics[0].Partitions[0].Leader
		}
		if ctx.Err() != nil {
			t.Fatalf("no leader of %s: %v", topic, fmt.Sprint(err, ctx.Err()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
