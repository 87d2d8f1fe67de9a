package compat

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// jbodBrokerID is the broker with two log directories that the JBOD step
// of TestApacheBrokersOnKraftd adds to the shared cluster.
const jbodBrokerID = 104

// checkJBOD is the JBOD step of TestApacheBrokersOnKraftd: an Apache
// broker with two log directories (104, added to the shared cluster and
// started on parent, the version's test, so that it runs until the
// cluster stops) on the kraftd quorum:
//   - the controller leaves each new replica's directory UNASSIGNED, the
//     broker places it and says where with AssignReplicasToDirs, and the
//     metadata log ends up naming, for every partition, the directory the
//     broker actually holds it in;
//   - the second directory then fails (replaced by a file, so the broker's
//     next checkpoint write there fails): the broker reports it in its
//     heartbeats, and kraftd takes the replicas in it out of leadership and
//     the directory out of the registration, while the partitions in the
//     first directory keep their leader.
//
// The topic is assigned to broker 104 alone (CreateTopics with a replica
// assignment), so that the other brokers' directories play no part.
func checkJBOD(t, parent *testing.T, c *brokerCluster) {
	base := parent.TempDir()
	dirs := []string{filepath.Join(base, "disk-a"), filepath.Join(base, "disk-b")}
	broker := NewApacheBroker(parent, c.v, jbodBrokerID, c.voters,
		map[string]string{"log.dirs": strings.Join(dirs, ","), "log.flush.offset.checkpoint.interval.ms": "1000"})
	broker.Format(parent, c.clusterID)
	broker.Start(parent)
	Eventually(t, ReadyTimeout, fmt.Sprintf("broker %d unfenced", jbodBrokerID), broker.Proc, func() error {
		m, err := Metadata(broker.Addr())
		if err != nil {
			return err
		}
		if !slices.Contains(m.Brokers, jbodBrokerID) {
			return fmt.Errorf("brokers %v", m.Brokers)
		}
		return nil
	})
	dirIDs := map[string]string{} // path -> directory.id
	for _, d := range dirs {
		dirIDs[d] = ParseProperties(readFile(t, filepath.Join(d, "meta.properties")))["directory.id"]
		if dirIDs[d] == "" {
			t.Fatalf("no directory.id in %s/meta.properties", d)
		}
	}
	// The active controller's metadata log (it holds every committed
	// record).
	leaderDir := func() string {
		return nodeByID(c.ctls, WaitLeader(t, Addrs(c.ctls...), nil).LeaderID).Dir
	}

	const topic, partitions = "jbod", 6
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	create.TimeoutMillis = 30000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	for p := range int32(partitions) {
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: []int32{jbodBrokerID}})
	}
	create.Topics = append(create.Topics, ct)
	resp, err := Request(broker.Addr(), create)
	if err != nil || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics through the broker: %v %+v", err, resp)
	}

	Eventually(t, ReadyTimeout, "every replica's directory recorded as the broker placed it", broker.Proc, func() error {
		held, err := brokerReplicaDirs(broker.Addr(), topic)
		if err != nil {
			return err
		}
		recorded := recordedReplicaDirs(t, leaderDir(), topic)
		for p := int32(0); p < partitions; p++ {
			path, ok := held[p]
			if !ok {
				return fmt.Errorf("the broker holds no replica of partition %d yet", p)
			}
			if want := dirIDs[path]; recorded[p] != want {
				return fmt.Errorf("partition %d is in %s (%s); the metadata log says %q", p, path, want, recorded[p])
			}
		}
		return nil
	})

	held, err := brokerReplicaDirs(broker.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	failed := dirs[1] // dirs[0] holds the broker's metadata log: losing it stops the broker
	if !slices.Contains(slices.Collect(maps.Values(held)), failed) {
		t.Fatalf("the broker placed no replica in %s: %v", failed, held)
	}
	if err := os.Rename(failed, failed+".gone"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, failed, []byte("not a directory"))
	Eventually(t, ReadyTimeout, "replicas in the failed directory without a leader, the others led", broker.Proc, func() error {
		m, err := Metadata(broker.Addr(), topic)
		if err != nil {
			return err
		}
		for p := int32(0); p < partitions; p++ {
			leader, inFailed := m.Leaders[topic][p], held[p] == failed
			if inFailed && leader != -1 || !inFailed && leader != int32(broker.NodeID) {
				return fmt.Errorf("partition %d (in %s) is led by %d", p, held[p], leader)
			}
		}
		return nil
	})
	var dropped bool
	for _, r := range DumpMetadataLog(t, leaderDir()) {
		if dirsLeft, _ := r.Fields["logDirs"].([]any); r.Type == "BrokerRegistrationChangeRecord" && r.Int("brokerId") == jbodBrokerID &&
			len(dirsLeft) == 1 && dirsLeft[0] == dirIDs[dirs[0]] {
			dropped = true
		}
	}
	if !dropped {
		t.Errorf("no BrokerRegistrationChangeRecord leaves broker %d with only %s", broker.NodeID, dirIDs[dirs[0]])
	}
}

// brokerReplicaDirs asks a broker (DescribeLogDirs) which directory holds
// each partition of topic.
func brokerReplicaDirs(addr, topic string) (map[int32]string, error) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(1)
	resp, err := Request(addr, req)
	if err != nil {
		return nil, err
	}
	out := map[int32]string{}
	for _, d := range resp.(*kmsg.DescribeLogDirsResponse).Dirs {
		for _, t := range d.Topics {
			if t.Topic != topic {
				continue
			}
			for _, p := range t.Partitions {
				out[p.Partition] = d.Dir
			}
		}
	}
	return out, nil
}

// recordedReplicaDirs reads, from a controller's metadata log, the latest
// directory of each partition of topic (RF 1: its only replica).
func recordedReplicaDirs(t *testing.T, metadataDir, topic string) map[int32]string {
	recs := DumpMetadataLog(t, metadataDir)
	var topicID string
	out := map[int32]string{}
	for _, r := range recs {
		switch r.Type {
		case "TopicRecord":
			if r.String("name") == topic {
				topicID = r.String("topicId")
			}
		case "PartitionRecord", "PartitionChangeRecord":
			dirs, _ := r.Fields["directories"].([]any)
			if r.String("topicId") != topicID || topicID == "" || len(dirs) != 1 {
				continue
			}
			if d, ok := dirs[0].(string); ok {
				out[int32(r.Int("partitionId"))] = d
			}
		}
	}
	return out
}
