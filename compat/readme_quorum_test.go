package compat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The README's three-node quorum with an Apache broker runs as written:
// its four property files, with only the ports and the directories
// replaced by the test's, formatted as the README formats them (kraftd
// format, Apache's storage tool), make three kraftd controllers that elect
// a leader and an Apache 4.4.0 broker that registers with them, takes a
// topic and hands back the message produced to it.
func TestReadmeQuorumWithBroker(t *testing.T) {
	t.Parallel()
	const version = "4.4.0"
	KafkaCache(t, version)
	readme, err := os.ReadFile(filepath.Join(RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ports := FreePorts(t, 4)
	base := t.TempDir()
	local := strings.NewReplacer(
		"127.0.0.1:9093", Addr(ports[0]), "127.0.0.1:9094", Addr(ports[1]),
		"127.0.0.1:9095", Addr(ports[2]), "127.0.0.1:9092", Addr(ports[3]),
		"demo/", base+"/")
	config := func(name string) string {
		path := filepath.Join(base, name)
		writeFile(t, path, []byte(local.Replace(docBlock(t, "README.md", string(readme), name))))
		return path
	}

	clusterID := NewUUID()
	var addrs []string
	for id := int32(1); id <= 3; id++ {
		conf := config(fmt.Sprintf("controller-%d.properties", id))
		KraftdFormat(t, id, conf, clusterID)
		StartKraftd(t, fmt.Sprintf("kraftd-node%d", id), "--log-format", "json", "start", "--config", conf)
		addrs = append(addrs, Addr(ports[id-1]))
	}
	st := WaitLeader(t, addrs, nil)
	t.Logf("leader %d, epoch %d", st.LeaderID, st.LeaderEpoch)

	ReserveJVMs(t, 1)
	broker := &ApacheBroker{Version: version, NodeID: 4, Port: ports[3],
		Dir: filepath.Join(base, "broker-4"), Config: config("broker.properties")}
	broker.Format(t, clusterID)
	broker.Start(t)
	CreateTopic(t, broker.Addr(), "hello", 3, 1, nil)

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr()), kgo.DefaultProduceTopic("hello"),
		kgo.ConsumeTopics("hello"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	Eventually(t, ReadyTimeout, "a message produced through the broker", broker.Proc, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, kgo.StringRecord("hello kraftd")).FirstErr()
	})
	Eventually(t, ReadyTimeout, "the message consumed back", broker.Proc, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fetches := cl.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		for _, r := range fetches.Records() {
			if string(r.Value) == "hello kraftd" {
				return nil
			}
		}
		return fmt.Errorf("no record yet")
	})
}
