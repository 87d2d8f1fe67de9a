package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Main classes of the admin tools that talk to brokers.
const (
	MainTopics = "org.apache.kafka.tools.TopicCommand" // kafka-topics.sh
)

// ConfigCommandClass is kafka-configs.sh's main class: it moved from the
// core jar to the tools jar after 4.1.
func ConfigCommandClass(version string) string {
	if version < "4.2" {
		return "kafka.admin.ConfigCommand"
	}
	return "org.apache.kafka.tools.ConfigCommand"
}

// ApacheBroker is an Apache Kafka broker (process.roles=broker) whose
// controllers are given by a static controller.quorum.voters.
type ApacheBroker struct {
	Version string
	NodeID  int
	Port    int    // PLAINTEXT listener on 127.0.0.1
	Dir     string // the first of log.dirs, and metadata.log.dir
	Config  string
	Props   map[string]string
	Proc    *Process
}

// NewApacheBroker writes a broker's configuration: PLAINTEXT on a free
// 127.0.0.1 port, the CONTROLLER listener name for reaching the quorum
// (voters, "1@127.0.0.1:9093,..."), one log directory. props override.
func NewApacheBroker(t testing.TB, version string, nodeID int, voters string, props map[string]string) *ApacheBroker {
	t.Helper()
	KafkaCache(t, version)
	base := t.TempDir()
	b := &ApacheBroker{Version: version, NodeID: nodeID, Port: FreePorts(t, 1)[0],
		Dir: filepath.Join(base, "data"), Config: filepath.Join(base, "broker.properties")}
	b.Props = map[string]string{
		"process.roles":                    "broker",
		"node.id":                          fmt.Sprint(nodeID),
		"listeners":                        "PLAINTEXT://" + Addr(b.Port),
		"advertised.listeners":             "PLAINTEXT://" + Addr(b.Port),
		"inter.broker.listener.name":       "PLAINTEXT",
		"controller.listener.names":        "CONTROLLER",
		"listener.security.protocol.map":   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"controller.quorum.voters":         voters,
		"log.dirs":                         b.Dir,
		"offsets.topic.replication.factor": "1",
		"group.initial.rebalance.delay.ms": "0",
	}
	for k, v := range props {
		b.Props[k] = v
	}
	// Several log.dirs (JBOD): the first holds meta.properties checks and
	// the metadata log.
	b.Dir, _, _ = strings.Cut(b.Props["log.dirs"], ",")
	writeFile(t, b.Config, []byte(FormatProperties(b.Props)))
	return b
}

// Format writes the broker's meta.properties with Apache's storage tool.
func (b *ApacheBroker) Format(t testing.TB, clusterID string) {
	t.Helper()
	stdout, stderr, err := RunTool(t, b.Version, MainStorageTool, "format", "-c", b.Config, "-t", clusterID)
	if err != nil {
		t.Fatalf("format broker %d (Apache %s): %v\n%s\n%s", b.NodeID, b.Version, err, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "meta.properties")); err != nil {
		t.Fatalf("format broker %d: %v", b.NodeID, err)
	}
}

// Start launches the broker (512 MiB heap), stopped by PID when the test ends.
func (b *ApacheBroker) Start(t testing.TB) {
	t.Helper()
	if b.Proc == nil {
		b.Proc = NewProcess(t, fmt.Sprintf("apache-%s-broker%d", b.Version, b.NodeID), ApacheArgv(t, b.Version, MainKafka, JVM{}, b.Config)...)
	}
	b.Proc.Start()
}

// Addr is the broker's PLAINTEXT address.
func (b *ApacheBroker) Addr() string { return Addr(b.Port) }

// BrokerMetadata is what a broker's Metadata answer says about the cluster:
// the brokers it lists (unfenced ones) and each partition's leader and ISR.
type BrokerMetadata struct {
	Brokers []int32
	Leaders map[string]map[int32]int32   // topic -> partition -> leader
	Isrs    map[string]map[int32][]int32 // topic -> partition -> ISR, sorted
	Resp    *kmsg.MetadataResponse
}

// Metadata asks a broker for the cluster's brokers and the given topics
// (all topics when none are named).
func Metadata(addr string, topics ...string) (*BrokerMetadata, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	if len(topics) > 0 {
		for _, name := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = &name
			req.Topics = append(req.Topics, rt)
		}
	} else {
		req.Topics = nil
	}
	r, err := Request(addr, req)
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.MetadataResponse)
	m := &BrokerMetadata{Leaders: map[string]map[int32]int32{}, Isrs: map[string]map[int32][]int32{}, Resp: resp}
	for _, b := range resp.Brokers {
		m.Brokers = append(m.Brokers, b.NodeID)
	}
	slices.Sort(m.Brokers)
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 || t.Topic == nil {
			continue
		}
		parts, isrs := map[int32]int32{}, map[int32][]int32{}
		for _, p := range t.Partitions {
			parts[p.Partition] = p.Leader
			isrs[p.Partition] = slices.Sorted(slices.Values(p.ISR))
		}
		m.Leaders[*t.Topic], m.Isrs[*t.Topic] = parts, isrs
	}
	return m, nil
}

// readFile reads a file or fails the test.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("compat: %v", err)
	}
	return b
}
