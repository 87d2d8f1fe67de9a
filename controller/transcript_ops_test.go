package controller

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txOp gives the core one operation; answer prints what it answers: a
// string as it is, a response by its fields.
type txOp func(tr *transcript, c txCmd, answer func(v any, err error))

// operation gives the core operation #n at the transcript's time and
// prints its answer when it comes: in this step, or in a later one.
func (tr *transcript) operation(c txCmd, op txOp) {
	tr.ops++
	n, answered := tr.ops, false
	op(tr, c, func(v any, err error) {
		answered = true
		text := errText(err)
		if err == nil {
			if s, ok := v.(string); ok {
				text = s
			} else {
				text = tr.brief(v)
			}
		}
		tr.printf("answer #%d %s: %s", n, c.name, text)
	})
	if !answered {
		tr.printf("#%d waiting", n)
	}
}

var txOperations = map[string]txOp{
	// register-broker id=<n> [inc=<incarnation>] [rack=r] [mv=lo-hi] [kraft=lo-hi]
	// [dirs=<count>] [cluster=<id>] [prev=<previous epoch>]
	"register-broker": func(tr *transcript, c txCmd, answer func(any, error)) {
		id, inc := int32(tr.int(c, "id", 1)), byte(tr.int(c, "inc", 1))
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.SetVersion(4)
		req.BrokerID, req.ClusterID = id, c.arg("cluster", testCluster)
		req.IncarnationID = [16]byte{0: inc, 1: byte(id), 15: 0xaa}
		req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(9000 + id)}}
		for _, f := range SupportedFeatures {
			lo, hi := f.Min, f.Max
			key := map[string]string{MetadataVersionFeature: "mv", KRaftVersionFeature: "kraft"}[f.Name]
			if r, ok := c.kv[key]; ok && key != "" {
				l, h, _ := strings.Cut(r, "-")
				lo, hi = int16(tr.num(c, l)), int16(tr.num(c, h))
			}
			req.Features = append(req.Features, kmsg.BrokerRegistrationRequestFeature{Name: f.Name, MinSupportedVersion: lo, MaxSupportedVersion: hi})
		}
		if r, ok := c.kv["rack"]; ok {
			req.Rack = &r
		}
		for d := range tr.int(c, "dirs", 1) {
			req.LogDirs = append(req.LogDirs, logDir(id, int32(d)))
		}
		req.PreviousBrokerEpoch = int64(tr.int(c, "prev", -1))
		tr.core.RegisterBroker(tr.now, req, func(epoch int64, err error) {
			if err == nil {
				tr.epochs[id] = epoch
			}
			answer(fmt.Sprintf("epoch=%d", epoch), err)
		})
	},
	// heartbeat id=<n> [epoch=<broker epoch>] [offset=<metadata offset,
	// the committed end by default>] [fence] [shutdown]
	// [offline-dirs=<indexes of its directories>]
	"heartbeat": func(tr *transcript, c txCmd, answer func(any, error)) {
		id := int32(tr.int(c, "id", 1))
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.SetVersion(1)
		req.BrokerID, req.BrokerEpoch = id, tr.brokerEpoch(c, id)
		req.CurrentMetadataOffset = int64(tr.int(c, "offset", int(tr.ctl.Applied())))
		req.WantFence, req.WantShutdown = c.has("fence"), c.has("shutdown")
		for _, d := range tr.ints(c, c.arg("offline-dirs", "")) {
			req.OfflineLogDirs = append(req.OfflineLogDirs, logDir(id, d))
		}
		tr.core.BrokerHeartbeat(tr.now, req, func(r *kmsg.BrokerHeartbeatResponse, err error) {
			if err != nil {
				answer(nil, err)
				return
			}
			answer(fmt.Sprintf("fenced=%v caught-up=%v shutdown=%v", r.IsFenced, r.IsCaughtUp, r.ShouldShutdown), nil)
		})
	},
	"unregister-broker": func(tr *transcript, c txCmd, answer func(any, error)) {
		tr.core.UnregisterBroker(tr.now, int32(tr.int(c, "id", 1)), func(err error) { answer("ok", err) })
	},
	// register-controller id=<n> [inc=<incarnation>]
	"register-controller": func(tr *transcript, c txCmd, answer func(any, error)) {
		s := tr.core.settings
		s.NodeID, s.Incarnation = int32(tr.int(c, "id", 2)), [16]byte{0: 0xc0, 1: byte(tr.int(c, "id", 2)), 2: byte(tr.int(c, "inc", 0))}
		tr.core.RegisterController(tr.now, selfRegistration(&s), func(err error) { answer("ok", err) })
	},
	"allocate-producer-ids": func(tr *transcript, c txCmd, answer func(any, error)) {
		id := int32(tr.int(c, "id", 1))
		tr.core.AllocateProducerIDs(tr.now, id, tr.brokerEpoch(c, id), func(start int64, n int32, err error) {
			answer(fmt.Sprintf("start=%d length=%d", start, n), err)
		})
	},
	// create-topics <name>... [partitions=n] [rf=n] [assign=1,2/2,3]
	// (partition 0 on 1,2, partition 1 on 2,3)
	// [config.<key>=<value>] [validate]
	"create-topics": func(tr *transcript, c txCmd, answer func(any, error)) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.ValidateOnly = c.has("validate")
		for _, name := range c.words {
			if name == "validate" {
				continue
			}
			t := kmsg.NewCreateTopicsRequestTopic()
			// With an explicit assignment Apache wants both counts -1.
			def := 1
			if c.arg("assign", "") != "" {
				def = -1
			}
			t.Topic, t.NumPartitions, t.ReplicationFactor = name, int32(tr.int(c, "partitions", def)), int16(tr.int(c, "rf", def))
			for i, replicas := range tr.assignment(c) {
				t.ReplicaAssignment = append(t.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: replicas})
			}
			for _, k := range c.keys {
				if key, ok := strings.CutPrefix(k, "config."); ok {
					v := c.kv[k]
					t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: key, Value: &v})
				}
			}
			req.Topics = append(req.Topics, t)
		}
		tr.core.CreateTopics(tr.now, req, func(r *kmsg.CreateTopicsResponse, err error) { answer(r, err) })
	},
	"delete-topics": func(tr *transcript, c txCmd, answer func(any, error)) {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(5)
		req.TopicNames = c.words
		tr.core.DeleteTopics(tr.now, req, func(r *kmsg.DeleteTopicsResponse, err error) { answer(r, err) })
	},
	// create-partitions <topic> count=<n> [assign=1,2/2,3] [validate]
	"create-partitions": func(tr *transcript, c txCmd, answer func(any, error)) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		req.ValidateOnly = c.has("validate")
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = c.words[0], int32(tr.int(c, "count", 1))
		for _, replicas := range tr.assignment(c) {
			t.Assignment = append(t.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: replicas})
		}
		req.Topics = append(req.Topics, t)
		tr.core.CreatePartitions(tr.now, req, func(r *kmsg.CreatePartitionsResponse, err error) { answer(r, err) })
	},
	// alter-partition <topic>-<p> broker=<leader> isr=1,2 [recovery=<state>]
	// [leader-epoch=n] [partition-epoch=n] (the committed ones by default)
	// [broker-epoch=n]
	"alter-partition": func(tr *transcript, c txCmd, answer func(any, error)) {
		topic, p := tr.partition(c, c.words[0])
		part, _ := tr.ctl.Partition(topic, p)
		broker := int32(tr.int(c, "broker", int(part.Leader)))
		req := kmsg.NewPtrAlterPartitionRequest()
		req.SetVersion(3)
		req.BrokerID, req.BrokerEpoch = broker, int64(tr.int(c, "broker-epoch", int(tr.epochs[broker])))
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderRecoveryState = p, int8(tr.int(c, "recovery", 0))
		rp.LeaderEpoch = int32(tr.int(c, "leader-epoch", int(part.LeaderEpoch)))
		rp.PartitionEpoch = int32(tr.int(c, "partition-epoch", int(part.PartitionEpoch)))
		for _, id := range tr.ints(c, c.arg("isr", "")) {
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: tr.epochs[id]})
		}
		req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: part.TopicID, Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
		tr.core.AlterPartition(tr.now, req, func(r *kmsg.AlterPartitionResponse, err error) { answer(r, err) })
	},
	// elect-leaders [unclean] [<topic>-<p>...] (every partition when none)
	"elect-leaders": func(tr *transcript, c txCmd, answer func(any, error)) {
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(2)
		for _, w := range c.words {
			if w == "unclean" {
				req.ElectionType = electionUnclean
				continue
			}
			topic, p := tr.partition(c, w)
			req.Topics = append(req.Topics, kmsg.ElectLeadersRequestTopic{Topic: topic, Partitions: []int32{p}})
		}
		tr.core.ElectLeaders(tr.now, req, func(r *kmsg.ElectLeadersResponse, err error) { answer(r, err) })
	},
	// assign-dirs id=<broker> dir=<index> <topic>-<p>...: the broker
	// placed these replicas in its directory dir
	"assign-dirs": func(tr *transcript, c txCmd, answer func(any, error)) {
		id := int32(tr.int(c, "id", 1))
		req := kmsg.NewPtrAssignReplicasToDirsRequest()
		req.BrokerID, req.BrokerEpoch = id, tr.brokerEpoch(c, id)
		dir := kmsg.AssignReplicasToDirsRequestDirectory{ID: logDir(id, int32(tr.int(c, "dir", 0)))}
		for _, w := range c.words {
			topic, p := tr.partition(c, w)
			part, _ := tr.ctl.Partition(topic, p)
			dir.Topics = append(dir.Topics, kmsg.AssignReplicasToDirsRequestDirectoryTopic{TopicID: part.TopicID,
				Partitions: []kmsg.AssignReplicasToDirsRequestDirectoryTopicPartition{{Partition: p}}})
		}
		req.Directories = append(req.Directories, dir)
		tr.core.AssignReplicasToDirs(tr.now, req, func(r *kmsg.AssignReplicasToDirsResponse, err error) { answer(r, err) })
	},
	// alter-reassignments <topic>-<p>=<replicas>|cancel ... [keep-rf]
	"alter-reassignments": func(tr *transcript, c txCmd, answer func(any, error)) {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.SetVersion(1)
		req.AllowReplicationFactorChange = !c.has("keep-rf")
		for _, k := range c.keys {
			if k == "at" {
				continue
			}
			topic, p := tr.partition(c, k)
			rp := kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: p}
			if v := c.kv[k]; v != "cancel" {
				rp.Replicas = tr.ints(c, v)
			}
			req.Topics = append(req.Topics, kmsg.AlterPartitionAssignmentsRequestTopic{Topic: topic, Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{rp}})
		}
		tr.core.AlterPartitionReassignments(tr.now, req, func(r *kmsg.AlterPartitionAssignmentsResponse, err error) { answer(r, err) })
	},
}

// logDir is the id of broker id's directory d, which a restarted broker
// keeps.
func logDir(id, d int32) [16]byte { return [16]byte{0: 0x10, 1: byte(id), 2: byte(d)} }

// brokerEpoch is epoch=, else the epoch broker id last registered with.
func (tr *transcript) brokerEpoch(c txCmd, id int32) int64 {
	return int64(tr.int(c, "epoch", int(tr.epochs[id])))
}

// assignment parses assign=1,2/2,3: the replicas of each partition.
func (tr *transcript) assignment(c txCmd) [][]int32 {
	var out [][]int32
	if a := c.arg("assign", ""); a != "" {
		for _, part := range strings.Split(a, "/") {
			out = append(out, tr.ints(c, part))
		}
	}
	return out
}

// partition parses <topic>-<partition>.
func (tr *transcript) partition(c txCmd, s string) (string, int32) {
	i := strings.LastIndexByte(s, '-')
	p, err := strconv.Atoi(s[i+1:])
	if i < 0 || err != nil {
		tr.t.Fatalf("%s: %q is not <topic>-<partition>", c.pos, s)
	}
	return s[:i], int32(p)
}
