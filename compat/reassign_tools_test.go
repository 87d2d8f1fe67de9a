package compat

// The harness of checkReassignAndElect (the AdminTools step of
// TestApacheBrokersOnKraftd): Apache's tools run through the brokers or
// straight to the controllers, and what the brokers' metadata and
// kraftd's ListPartitionReassignments show.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type reassignTools struct {
	t       *testing.T
	v       string
	ctls    []*kraftdNode
	brokers *BrokerSet
	dir     string
}

// reassign runs kafka-reassign-partitions through the first running
// broker, or straight to the controllers with direct.
func (rt *reassignTools) reassign(direct bool, args ...string) string {
	rt.t.Helper()
	out, err := rt.reassignErr(direct, args...)
	if err != nil {
		rt.t.Fatalf("%v\nstdout:\n%s", err, out)
	}
	return out
}

func (rt *reassignTools) reassignErr(direct bool, args ...string) (string, error) {
	rt.t.Helper()
	bootstrap := []string{"--bootstrap-server", rt.runningBroker()}
	if direct {
		bootstrap = []string{"--bootstrap-controller", strings.Join(Addrs(rt.ctls...), ",")}
	}
	return toolOutput(rt.t, rt.v, MainReassign, append(bootstrap, args...)...)
}

func (rt *reassignTools) runningBroker() string {
	for _, b := range rt.brokers.Brokers {
		if b.Proc != nil {
			if exited, _ := b.Proc.Exited(); !exited {
				return b.Addr()
			}
		}
	}
	rt.t.Fatal("no broker is running")
	return ""
}

func (rt *reassignTools) file(name, content string) string {
	path := filepath.Join(rt.dir, name)
	writeFile(rt.t, path, []byte(content))
	return path
}

// createTopic creates topic with the given replicas per partition through
// a broker, and waits until every partition has all of them in its ISR.
func (rt *reassignTools) createTopic(topic string, assignment [][]int32) {
	rt.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	want := map[int32][]int32{}
	for p, replicas := range assignment {
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(p), Replicas: replicas})
		want[int32(p)] = replicas
	}
	req.Topics = append(req.Topics, ct)
	// A broker may be unfenced before its own listener accepts; try each.
	// A retry after a lost answer finds the topic there.
	Eventually(rt.t, ReadyTimeout, "create "+topic, nil, func() error {
		var last error
		for _, addr := range rt.brokers.Addrs() {
			resp, err := Request(addr, req)
			if err != nil {
				last = err
				continue
			}
			r := resp.(*kmsg.CreateTopicsResponse).Topics[0]
			if r.ErrorCode != 0 && r.ErrorCode != kerr.TopicAlreadyExists.Code {
				rt.t.Fatalf("create %s: %v %v", topic, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
			}
			return nil
		}
		return last
	})
	rt.waitReplicas(topic, want)
}

// verify runs --verify once the brokers' metadata shows the move done: it
// must report every partition completed, and clear the throttles.
func (rt *reassignTools) verify(plan string) {
	rt.t.Helper()
	out := rt.reassign(false, "--verify", "--reassignment-json-file", plan)
	rt.t.Logf("kafka-reassign-partitions --verify:\n%s", out)
	if strings.Contains(out, "still in progress") || !strings.Contains(out, "is completed") {
		rt.t.Errorf("--verify printed %q", out)
	}
}

// replicas waits until each partition of topic has the given replicas, in
// order, as the brokers' metadata says, and a full ISR of them.
func (rt *reassignTools) waitReplicas(topic string, want map[int32][]int32) {
	rt.t.Helper()
	Eventually(rt.t, ReadyTimeout, fmt.Sprintf("%s replicas %v", topic, want), nil, func() error {
		got, isrs, err := rt.assignment(topic)
		if err != nil {
			return err
		}
		for p, r := range want {
			if !slices.Equal(got[p], r) || !slices.Equal(isrs[p], slices.Sorted(slices.Values(r))) {
				return fmt.Errorf("partition %d: replicas %v ISR %v", p, got[p], isrs[p])
			}
		}
		return nil
	})
}

func (rt *reassignTools) assignment(topic string) (replicas, isrs map[int32][]int32, err error) {
	m, err := rt.brokers.Metadata(topic)
	if err != nil {
		return nil, nil, err
	}
	replicas = map[int32][]int32{}
	for _, tm := range m.Resp.Topics {
		if tm.Topic != nil && *tm.Topic == topic {
			for _, p := range tm.Partitions {
				replicas[p.Partition] = p.Replicas
			}
		}
	}
	return replicas, m.Isrs[topic], nil
}

// fillPartition writes about size bytes to partition 0 of topic, acks=all.
func fillPartition(t *testing.T, seeds []string, topic string, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	value := []byte(strings.Repeat("x", 1024))
	errs := make(chan error, 1)
	for i := range size / len(value) {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("writing %s: %v", topic, err)
	default:
	}
}

// waitListed waits until every running kraftd lists the move of bulk-0
// in flight (ListPartitionReassignments, with replicas, adding and
// removing as given), then runs --list, straight to the controllers, once:
// it must print want. (Each tool run is a JVM start, and the tool may ask
// any controller.)
func (rt *reassignTools) waitListed(want string, replicas, adding, removing []int32) {
	rt.t.Helper()
	var addrs []string
	for _, n := range rt.ctls {
		if n.Proc != nil {
			if exited, _ := n.Proc.Exited(); !exited {
				addrs = append(addrs, n.Addr())
			}
		}
	}
	waitEveryBroker(rt.t, addrs, "every kraftd lists bulk-0 in flight", func(addr string) error {
		resp, err := Request(addr, kmsg.NewPtrListPartitionReassignmentsRequest())
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ListPartitionReassignmentsResponse)
		if len(r.Topics) != 1 || r.Topics[0].Topic != "bulk" || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("lists %+v", r.Topics)
		}
		p := r.Topics[0].Partitions[0]
		if p.Partition != 0 || !slices.Equal(p.Replicas, replicas) || !slices.Equal(p.AddingReplicas, adding) || !slices.Equal(p.RemovingReplicas, removing) {
			return fmt.Errorf("lists %+v", p)
		}
		return nil
	})
	out, err := rt.reassignErr(true, "--list")
	if err != nil {
		rt.t.Fatal(err)
	}
	if !strings.Contains(out, want) {
		rt.t.Errorf("--list printed %q, want %q", out, want)
	}
}

// listDirect asks every kraftd that runs for the reassignments in flight
// (ListPartitionReassignments, read from its committed image) and
// returns the active one's answer.
func (rt *reassignTools) listDirect() []kmsg.ListPartitionReassignmentsResponseTopic {
	rt.t.Helper()
	s := WaitLeader(rt.t, Addrs(rt.ctls...), nil)
	resp, err := Request(nodeByID(rt.ctls, s.LeaderID).Addr(), kmsg.NewPtrListPartitionReassignmentsRequest())
	if err != nil {
		rt.t.Fatal(err)
	}
	return resp.(*kmsg.ListPartitionReassignmentsResponse).Topics
}

// elect runs kafka-leader-election through a running broker for
// partition 0 of each topic.
func (rt *reassignTools) elect(typ string, topics ...string) string {
	rt.t.Helper()
	var parts []string
	for _, topic := range topics {
		parts = append(parts, fmt.Sprintf(`{"topic":%q,"partition":0}`, topic))
	}
	file := rt.file("elect-"+typ+".json", `{"partitions":[`+strings.Join(parts, ",")+`]}`)
	out, err := toolOutput(rt.t, rt.v, MainLeaderElection, "--bootstrap-server", rt.runningBroker(),
		"--election-type", typ, "--path-to-json-file", file)
	if err != nil {
		rt.t.Fatalf("%v\nstdout:\n%s", err, out)
	}
	rt.t.Logf("kafka-leader-election --election-type %s:\n%s", typ, out)
	return out
}

func (rt *reassignTools) waitLeader(topic string, want int32) {
	rt.t.Helper()
	Eventually(rt.t, ReadyTimeout, fmt.Sprintf("%s-0 led by %d", topic, want), nil, func() error {
		m, err := rt.brokers.Metadata(topic)
		if err != nil {
			return err
		}
		if l := m.Leaders[topic][0]; l != want {
			return fmt.Errorf("led by %d", l)
		}
		return nil
	})
}
