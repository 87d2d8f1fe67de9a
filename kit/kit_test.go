package kit_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kraftd/kraftd/kit"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
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

// With TLS and SASL PLAIN, a kraftd and an Apache controller reach each
// other and the broker reaches them over SASL_SSL with the kit's
// certificates and user; a client that trusts the kit's CA and logs in
// produces, one that speaks plaintext or does not log in is not served.
func TestTLSCluster(t *testing.T) {
	c := kit.StartT(t, kit.Spec{Brokers: 1, KraftdControllers: 1, ApacheControllers: 1, Kafka: "4.4.0", TLS: true, SASL: kit.SASLPlain})
	if c.TLSConfig() == nil || c.CAFile() == "" {
		t.Fatal("a TLS cluster without a client TLS configuration or CA file")
	}
	if _, err := os.Stat(c.CAFile()); err != nil {
		t.Fatal(err)
	}
	if got := c.ClientProperties()["security.protocol"]; got != "SASL_SSL" {
		t.Errorf("client security.protocol %q, want SASL_SSL", got)
	}
	produceWith(t, c, "over SASL_SSL", kgo.DialTLSConfig(c.TLSConfig()), kgo.SASL(c.SASLMechanism()))
	for _, addr := range append(c.Bootstrap(), c.Controllers()[0].Addr(), c.Controllers()[1].Addr()) {
		refused(t, addr, "a plaintext client")
		refused(t, addr, "a TLS client that does not log in", kgo.DialTLSConfig(c.TLSConfig()))
	}
}

// With SCRAM-SHA-256 on the brokers' listener (SASL_PLAINTEXT), the
// credential formatted into the metadata lets a client in from the start;
// a wrong password is refused.
func TestSCRAMCluster(t *testing.T) {
	c := kit.StartT(t, kit.Spec{Brokers: 1, KraftdControllers: 1, ApacheControllers: 1, Kafka: "4.4.0", SASL: kit.SASLScramSHA256})
	mechanism, password := c.SASL()
	if mechanism != kit.SASLScramSHA256 || len(password) < 20 {
		t.Fatalf("SASL() = %q and a password of %d characters", mechanism, len(password))
	}
	produceWith(t, c, "over SCRAM", kgo.SASL(c.SASLMechanism()))
	wrong := scram.Auth{User: kit.SASLUser, Pass: password + "x"}.AsSha256Mechanism()
	refused(t, c.Bootstrap()[0], "a wrong password", kgo.SASL(wrong))
	refused(t, c.Controllers()[0].Addr(), "a client that does not log in")
}

// produceWith produces one record to kit.ReadyTopic with a client of opts.
func produceWith(t *testing.T, c *kit.Cluster, value string, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...)}, opts...)...)
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

// refused checks that addr does not answer a client of opts.
func refused(t *testing.T, addr, who string, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err == nil {
		t.Errorf("%s answered %s", addr, who)
	}
}
