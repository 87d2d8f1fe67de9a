package kit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadyTopic is the topic WaitReady creates and produces to: one partition,
// replicated to up to three brokers.
const ReadyTopic = "kit.ready"

// WaitReady waits until every broker of the cluster that is running is
// registered and unfenced, and a produce with acks=all to ReadyTopic
// succeeds. It returns an error at once if a node's process has exited.
func (c *Cluster) WaitReady(ctx context.Context) error {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MetadataMinAge(250 * time.Millisecond), kgo.RetryTimeout(5 * time.Second)}
	if cfg := c.TLSConfig(); cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if m := c.SASLMechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	defer cl.Close()
	var want []int32
	for _, b := range c.brokers {
		if b.Running() {
			want = append(want, b.ID)
		}
	}
	steps := []struct {
		what  string
		probe func(context.Context) error
	}{
		{fmt.Sprintf("brokers %v unfenced", want), func(ctx context.Context) error { return brokersUnfenced(ctx, cl, want) }},
		{"topic " + ReadyTopic + " created", func(ctx context.Context) error { return createReadyTopic(ctx, cl, min(3, len(c.brokers))) }},
		{"a produce to " + ReadyTopic, func(ctx context.Context) error {
			return cl.ProduceSync(ctx, &kgo.Record{Topic: ReadyTopic, Value: []byte("ready")}).FirstErr()
		}},
	}
	for _, s := range steps {
		if err := c.poll(ctx, s.what, s.probe); err != nil {
			return err
		}
	}
	return nil
}

// poll calls probe until it succeeds, a node exits, or ctx is done.
func (c *Cluster) poll(ctx context.Context, what string, probe func(context.Context) error) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := probe(attempt)
		cancel()
		if err == nil {
			return nil
		}
		if exit := c.exited(c.Nodes()); exit != nil {
			return fmt.Errorf("kit: waiting for %s: %w (last probe: %v)", what, exit, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kit: waiting for %s: %w (last probe: %v)", what, ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

// brokersUnfenced asks for metadata and checks that it lists exactly want.
func brokersUnfenced(ctx context.Context, cl *kgo.Client, want []int32) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	var got []int32
	for _, b := range resp.Brokers {
		got = append(got, b.NodeID)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("brokers %v are listed", got)
	}
	return nil
}

// createReadyTopic creates ReadyTopic; it existing already is fine.
func createReadyTopic(ctx context.Context, cl *kgo.Client, rf int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = ReadyTopic, 1, int16(rf)
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("CreateTopics answered %d topics", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}
