package kit_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kraftd/kraftd/kit"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A mixed quorum (two kraftd controllers, one Apache 4.4.0 controller) and
// one broker, in a kept directory: a paused broker is stopped (state T)
// and takes produce again once resumed; a SIGKILLed controller restarts; a
// second Start on the directory brings the same cluster back with its data.
func TestMixedQuorumNodesAndKeptData(t *testing.T) {
	dir := t.TempDir()
	spec := kit.Spec{Brokers: 1, KraftdControllers: 2, ApacheControllers: 1, Kafka: "4.4.0", Dir: dir}
	c := kit.StartT(t, spec)
	if got := len(c.Controllers()); got != 3 || c.Controllers()[2].Role != kit.RoleApacheController {
		t.Fatalf("controllers %v", c.Controllers())
	}
	produce(t, c, "one")

	broker := c.Brokers()[0]
	if err := broker.Pause(); err != nil {
		t.Fatal(err)
	}
	if stateOf(t, broker.PID()) != "T" {
		t.Fatalf("broker %d (pid %d) is not stopped after Pause", broker.ID, broker.PID())
	}
	if err := broker.Resume(); err != nil {
		t.Fatal(err)
	}
	produce(t, c, "two")

	ctl := c.Controllers()[0]
	ctl.Kill()
	if ctl.Running() {
		t.Fatal("controller 1 runs after Kill")
	}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	produce(t, c, "three")
	id := c.ClusterID()
	c.Stop()

	again := kit.StartT(t, spec)
	if again.ClusterID() != id {
		t.Fatalf("cluster id %s after a restart on %s, want %s", again.ClusterID(), dir, id)
	}
	if n := countRecords(t, again); n < 4 { // three produced here, one by WaitReady each run
		t.Fatalf("%d records in %s after the restart, want at least 4", n, kit.ReadyTopic)
	}
}

func produce(t *testing.T, c *kit.Cluster, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: kit.ReadyTopic, Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce %q: %v", value, err)
	}
}

// countRecords reads ReadyTopic from the start up to its end.
func countRecords(t *testing.T, c *kit.Cluster) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumeTopics(kit.ReadyTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := 0
	for n < 4 {
		f := cl.PollFetches(ctx)
		if err := f.Err(); err != nil {
			t.Fatalf("after %d records: %v", n, err)
		}
		n += f.NumRecords()
	}
	return n
}

// stateOf is the process state letter /proc gives (R, S, T, ...).
func stateOf(t *testing.T, pid int) string {
	t.Helper()
	for range 100 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		var p int
		var comm, state string
		fmt.Sscanf(string(b), "%d %s %s", &p, &comm, &state)
		if state == "T" {
			return state
		}
		time.Sleep(10 * time.Millisecond) // the signal is delivered asynchronously
	}
	return "not T"
}

// With TLS, a kraftd and an Apache controller reach each other and the
// broker reaches them over TLS with the kit's certificates; a client that
// trusts the kit's CA produces, one that speaks plaintext is not served.
func TestTLSCluster(t *testing.T) {
	c := kit.StartT(t, kit.Spec{Brokers: 1, KraftdControllers: 1, ApacheControllers: 1, Kafka: "4.4.0", TLS: true})
	if c.TLSConfig() == nil || c.CAFile() == "" {
		t.Fatal("a TLS cluster without a client TLS configuration or CA file")
	}
	if _, err := os.Stat(c.CAFile()); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DialTLSConfig(c.TLSConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: kit.ReadyTopic, Value: []byte("over TLS")}).FirstErr(); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	for _, addr := range append(c.Bootstrap(), c.Controllers()[0].Addr(), c.Controllers()[1].Addr()) {
		plain, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		short, stop := context.WithTimeout(ctx, 10*time.Second)
		if err := plain.Ping(short); err == nil {
			t.Errorf("%s answered a plaintext client", addr)
		}
		stop()
		plain.Close()
	}
}
