package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/quorum"
)

// The cluster around the quorum: simulated brokers that register,
// heartbeat, go away and come back, and an admin that creates and deletes
// topics, adds partitions and alters configs, all through the real
// controller core of whichever node they believe is active.

const (
	simClusterID   = "c2ltLWNsdXN0ZXItaWQw"
	sessionTimeout = 2 * time.Second
)

// topicNames is the admin's pool: few names, so creates and deletes of the
// same topic race.
var topicNames = []string{"a", "b", "c", "d", "e", "f"}

type simBroker struct {
	id          int32
	incarnation [16]byte
	epoch       int64 // -1 until registered
	pending     bool  // a registration or heartbeat is out
	nextAt      int64 // when to act next
	awayUntil   int64 // gone (no heartbeats) until then
	lastEpoch   int64 // the last epoch a registration answered
}

// startController gives a node's incarnation its controller core.
func (s *Sim) startController(n *simNode) {
	n.core = controller.NewCore(n.ctl, simLog{n}, controller.Settings{
		NodeID:                   n.id,
		ClusterID:                simClusterID,
		SessionTimeout:           sessionTimeout,
		DefaultPartitions:        1,
		DefaultReplicationFactor: 1,
		Rand:                     rand.New(rand.NewPCG(s.opts.Seed, uint64(n.id)<<32|n.incarn|1<<62)),
		TopicIDs:                 rand.NewChaCha8(seedBytes(s.opts.Seed, n.id, n.incarn)),
	})
}

func seedBytes(seed uint64, id int32, incarn uint64) (b [32]byte) {
	for i := range 8 {
		b[i] = byte(seed >> (8 * i))
		b[8+i] = byte(incarn >> (8 * i))
	}
	b[16] = byte(id)
	return b
}

// simLog is a controller core's Log: proposals wait in the node until the
// simulator hands them to the runtime (flushProposals), so the core is never
// called back from inside its own Propose.
type simLog struct{ n *simNode }

func (l simLog) Propose(epoch int32, records []metadata.Record, stamp func(int64), done func(int64, error)) error {
	n := l.n
	p := &node.Proposal{Records: records, Epoch: epoch}
	p.Done = func(first int64, err error) {
		if err == nil {
			n.s.check.acked(n, first, records)
		}
		done(first, err)
	}
	if stamp != nil {
		p.Stamp = func(first int64) {
			controller.StampOffsets(records, first)
			stamp(first)
		}
	}
	n.proposals = append(n.proposals, p)
	return nil
}

func (l simLog) Leader() (int32, bool) {
	if !l.n.up {
		return 0, false
	}
	st := l.n.node.Status()
	return st.Epoch, st.Role == quorum.RoleLeader
}

// flushProposals hands the core's proposals to the runtime; what that
// answers at once may queue more.
func (n *simNode) flushProposals() {
	for n.up && len(n.proposals) > 0 {
		ps := n.proposals
		n.proposals = nil
		for _, p := range ps {
			n.node.Propose(p)
		}
	}
}

// target is the node a client sends to: mostly the leader it can see, at
// times any node (which answers NOT_CONTROLLER).
func (s *Sim) target() *simNode {
	if s.rand.IntN(5) > 0 {
		if l := s.check.newestLeader(); l != nil && l.running() {
			return l
		}
	}
	n := s.nodes[s.rand.IntN(len(s.nodes))]
	if !n.running() {
		return nil
	}
	return n
}

// clusterWork runs one step of the brokers, the admin and the cores'
// timed work.
func (s *Sim) clusterWork() {
	now := time.UnixMilli(s.now)
	for _, b := range s.brokers {
		s.brokerStep(b, now)
	}
	if s.rand.Float64() < s.faults.AdminProb {
		s.adminStep(now)
	}
	if s.now%100 == 0 {
		for _, n := range s.nodes {
			if n.running() {
				n.core.Tick(now)
				n.flushProposals()
			}
		}
	}
}

func (s *Sim) brokerStep(b *simBroker, now time.Time) {
	if b.pending || s.now < b.nextAt || s.now < b.awayUntil {
		return
	}
	n := s.target()
	if n == nil {
		return
	}
	b.nextAt = s.now + 300 + s.rand.Int64N(200)
	if s.rand.Float64() < s.faults.BrokerAwayProb {
		// Gone for a while: its session expires; it comes back as a new
		// incarnation.
		b.awayUntil = s.now + sessionTimeout.Milliseconds() + s.rand.Int64N(2000)
		b.epoch = -1
		b.incarnation[0]++
		return
	}
	b.pending = true
	if b.epoch < 0 {
		s.register(n, b, now)
		return
	}
	if s.rand.IntN(4) == 0 && s.alterPartition(n, b, now) {
		return
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	req.CurrentMetadataOffset = max(0, n.node.Status().HighWatermark-1)
	n.core.BrokerHeartbeat(now, req, func(resp *kmsg.BrokerHeartbeatResponse, err error) {
		b.pending = false
		if err == nil && resp.ErrorCode == 0 {
			s.stats.Heartbeats++
		}
		if err == nil && resp.ErrorCode == kerr.StaleBrokerEpoch.Code {
			b.epoch = -1 // fenced and forgotten: register again
		}
	})
	n.flushProposals()
}

func (s *Sim) register(n *simNode, b *simBroker, now time.Time) {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID, req.ClusterID, req.IncarnationID = b.id, simClusterID, b.incarnation
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "sim", Port: uint16(b.id)}}
	req.Features = []kmsg.BrokerRegistrationRequestFeature{{Name: controller.MetadataVersionFeature, MinSupportedVersion: 7, MaxSupportedVersion: controller.LatestMetadataVersion}}
	req.LogDirs = [][16]byte{{0: 0x10, 1: byte(b.id), 2: b.incarnation[0], 15: 1}}
	req.PreviousBrokerEpoch = -1
	n.core.RegisterBroker(now, req, func(epoch int64, err error) {
		b.pending = false
		if err != nil {
			return
		}
		if epoch <= b.lastEpoch {
			s.check.fail(fmt.Errorf("broker %d registered with epoch %d after epoch %d", b.id, epoch, b.lastEpoch))
		}
		b.epoch, b.lastEpoch = epoch, epoch
		s.stats.Registrations++
	})
	n.flushProposals()
}

// alterPartition has the broker change the ISR of a partition it leads,
// as the node's committed image shows it: down to itself, or back to every
// replica. It reports whether it sent one.
func (s *Sim) alterPartition(n *simNode, b *simBroker, now time.Time) bool {
	name := topicNames[s.rand.IntN(len(topicNames))]
	p, ok := n.ctl.Partition(name, 0)
	if !ok {
		return false
	}
	s.check.partitionLeader(n, p)
	if p.Leader != b.id {
		return false
	}
	isr := []int32{b.id}
	if len(p.Isr) == 1 {
		isr = p.Replicas
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(2)
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	t := kmsg.NewAlterPartitionRequestTopic()
	t.TopicID = p.TopicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = 0, p.LeaderEpoch, p.PartitionEpoch, isr
	t.Partitions = []kmsg.AlterPartitionRequestTopicPartition{rp}
	req.Topics = []kmsg.AlterPartitionRequestTopic{t}
	n.core.AlterPartition(now, req, func(resp *kmsg.AlterPartitionResponse, err error) {
		b.pending = false
		if err == nil && resp.ErrorCode == 0 {
			s.stats.AlterPartitions++
		}
	})
	n.flushProposals()
	return true
}

func (s *Sim) adminStep(now time.Time) {
	n := s.target()
	if n == nil {
		return
	}
	name := topicNames[s.rand.IntN(len(topicNames))]
	switch s.rand.IntN(6) {
	case 0, 1:
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1+s.rand.Int32N(3), 1
		req.Topics = []kmsg.CreateTopicsRequestTopic{t}
		op := s.history.call(s.now, topicOp{create: true, name: name})
		n.core.CreateTopics(now, req, func(resp *kmsg.CreateTopicsResponse, err error) {
			code := topLevelCode(err)
			if err == nil && len(resp.Topics) == 1 {
				code = resp.Topics[0].ErrorCode
			}
			s.history.answer(op, s.now, code)
		})
	case 2:
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(6)
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = &name
		req.Topics = []kmsg.DeleteTopicsRequestTopic{t}
		op := s.history.call(s.now, topicOp{name: name})
		n.core.DeleteTopics(now, req, func(resp *kmsg.DeleteTopicsResponse, err error) {
			code := topLevelCode(err)
			if err == nil && len(resp.Topics) == 1 {
				code = resp.Topics[0].ErrorCode
			}
			s.history.answer(op, s.now, code)
		})
	case 3:
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = name, 2+s.rand.Int32N(4)
		req.Topics = []kmsg.CreatePartitionsRequestTopic{t}
		n.core.CreatePartitions(now, req, func(*kmsg.CreatePartitionsResponse, error) {})
	case 4:
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(1)
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		v := fmt.Sprint(60000 * (1 + s.rand.IntN(100)))
		c.Name, c.Op, c.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, &v
		r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{c}
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{r}
		n.core.IncrementalAlterConfigs(now, req, func(*kmsg.IncrementalAlterConfigsResponse, error) {})
	case 5:
		// metadata.version to the level it has: accepted, and writes
		// nothing new.
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(1)
		f := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		f.Feature, f.MaxVersionLevel = controller.MetadataVersionFeature, controller.LatestMetadataVersion
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{f}
		n.core.UpdateFeatures(now, req, func(*kmsg.UpdateFeaturesResponse, error) {})
	}
	n.flushProposals()
}

// topLevelCode is the Kafka error code of an operation that failed as a
// whole; NOT_CONTROLLER (and a timeout) leave its outcome unknown.
func topLevelCode(err error) int16 {
	code, _ := controller.ErrorCode(err)
	return code
}

// never is the return time of an operation whose answer never came.
const never = math.MaxInt64
