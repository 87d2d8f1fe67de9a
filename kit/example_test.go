package kit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/kraftd/kraftd/kit"
	"github.com/twmb/franz-go/pkg/kgo"
)

// One Apache Kafka 4.4.0 broker on three kraftd controllers: start it,
// produce a record, read it back, stop it all.
func Example() {
	ctx := context.Background()
	cluster, err := kit.Start(ctx, kit.Spec{Brokers: 1, KraftdControllers: 3, Kafka: "4.4.0"})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Stop()

	client, err := kgo.NewClient(kgo.SeedBrokers(cluster.Bootstrap()...),
		kgo.ConsumeTopics(kit.ReadyTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if err := client.ProduceSync(ctx, &kgo.Record{Topic: kit.ReadyTopic, Value: []byte("hello")}).FirstErr(); err != nil {
		log.Fatal(err)
	}
	for {
		fetches := client.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			log.Fatal(err)
		}
		var found bool
		fetches.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == "hello" })
		if found {
			break
		}
	}
	fmt.Println("brokers:", len(cluster.Brokers()), "controllers:", len(cluster.Controllers()))
	// Output: brokers: 1 controllers: 3
}
