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

// startController gives a node's incarnation its controller core, driven
// by the node's seam as in production.
func (s *Sim) startController(n *simNode) {
	n.seam = n.node.AttachController(n.ctl, controller.Settings{
		NodeID:                   n.id,
		ClusterID:                simClusterID,
		SessionTimeout:           sessionTimeout,
		DefaultPartitions:        1,
		DefaultReplicationFactor: 1,
		Rand:                     rand.New(rand.NewPCG(s.opts.Seed, uint64(n.id)<<32|n.incarn|1<<62)),
		TopicIDs:                 rand.NewChaCha8(seedBytes(s.opts.Seed, n.id, n.incarn)),
		// Each incarnation registers anew, as a restarted Apache
		// controller does.
		Incarnation: [16]byte{0: byte(n.id), 1: byte(n.incarn), 2: byte(n.incarn >> 8), 15: 0xc},
		Listeners:   []controller.Listener{{Name: "CONTROLLER", Host: "sim", Port: uint16(9000 + n.id)}},
	})
	n.seam.OnCommitted(func(first int64, records []metadata.Record) { s.check.acked(n, first, records) })
}

func seedBytes(seed uint64, id int32, incarn uint64) (b [32]byte) {
	for i := range 8 {
		b[i] = byte(seed >> (8 * i))
		b[8+i] = byte(incarn >> (8 * i))
	}
	b[16] = byte(id)
	return b
}

// do gives the node's controller core one input, as a request handler's
// would reach it through the node's loop.
func (n *simNode) do(input func(core *controller.Core, now time.Time)) { n.seam.Do(input) }

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

// clusterWork runs one step of the brokers, the admin and the
// controllers' registrations. (The cores' timed work runs as the nodes
// tick, node/seam.go.)
func (s *Sim) clusterWork() {
	for _, b := range s.brokers {
		s.brokerStep(b)
	}
	if s.rand.Float64() < s.faults.AdminProb {
		s.adminStep()
	}
	for _, n := range s.nodes {
		s.registerController(n)
	}
}

// registrationPoll is how often a controller that does not lead looks
// whether it must register with the leader, as production's does
// (embed/controller_glue.go); registrationRetry after a failure.
const (
	registrationPoll  = 100
	registrationRetry = 1000
)

// registerController sends, from a controller that does not lead, the
// ControllerRegistration its core asks for (Core.RegistrationToSend) to
// the leader it knows, over a link no partition cuts; the leader's core
// answers it as the request handler would.
func (s *Sim) registerController(n *simNode) {
	if !n.running() || s.now < n.nextRegistration {
		return
	}
	n.nextRegistration = s.now + registrationPoll
	var req *kmsg.ControllerRegistrationRequest
	n.do(func(core *controller.Core, _ time.Time) { req = core.RegistrationToSend() })
	if req == nil {
		return
	}
	leader := s.byID[n.node.Status().LeaderID]
	if leader == nil || !leader.running() || s.net.cut[[2]int32{n.id, leader.id}] || s.net.cut[[2]int32{leader.id, n.id}] {
		n.nextRegistration = s.now + registrationRetry
		return
	}
	leader.do(func(core *controller.Core, now time.Time) {
		core.RegisterController(now, req, func(err error) {
			if err != nil {
				n.nextRegistration = s.now + registrationRetry
				return
			}
			s.stats.ControllerRegistrations++
		})
	})
}

func (s *Sim) brokerStep(b *simBroker) {
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
		s.register(n, b)
		return
	}
	if s.rand.IntN(4) == 0 && s.alterPartition(n, b) {
		return
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	req.CurrentMetadataOffset = max(0, n.node.Status().HighWatermark-1)
	n.do(func(core *controller.Core, now time.Time) {
		core.BrokerHeartbeat(now, req, func(resp *kmsg.BrokerHeartbeatResponse, err error) {
			b.pending = false
			if err == nil && resp.ErrorCode == 0 {
				s.stats.Heartbeats++
			}
			if err == nil && resp.ErrorCode == kerr.StaleBrokerEpoch.Code {
				b.epoch = -1 // fenced and forgotten: register again
			}
		})
	})
}

func (s *Sim) register(n *simNode, b *simBroker) {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID, req.ClusterID, req.IncarnationID = b.id, simClusterID, b.incarnation
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "sim", Port: uint16(b.id)}}
	// As an Apache 4.x broker: the quorum's kraft.version (1 in a
	// dynamic quorum, or once upgraded) must be one it supports.
	req.Features = []kmsg.BrokerRegistrationRequestFeature{
		{Name: controller.MetadataVersionFeature, MinSupportedVersion: 7, MaxSupportedVersion: controller.LatestMetadataVersion},
		{Name: controller.KRaftVersionFeature, MinSupportedVersion: 0, MaxSupportedVersion: 1},
	}
	req.LogDirs = [][16]byte{{0: 0x10, 1: byte(b.id), 2: b.incarnation[0], 15: 1}}
	req.PreviousBrokerEpoch = -1
	n.do(func(core *controller.Core, now time.Time) {
		core.RegisterBroker(now, req, func(epoch int64, err error) {
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
	})
}

// alterPartition has the broker change the ISR of a partition it leads,
// as the node's committed image shows it: down to itself, or back to every
// replica. It reports whether it sent one.
func (s *Sim) alterPartition(n *simNode, b *simBroker) bool {
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
	n.do(func(core *controller.Core, now time.Time) {
		core.AlterPartition(now, req, func(resp *kmsg.AlterPartitionResponse, err error) {
			b.pending = false
			if err == nil && resp.ErrorCode == 0 {
				s.stats.AlterPartitions++
			}
		})
	})
	return true
}

func (s *Sim) adminStep() {
	n := s.target()
	if n == nil {
		return
	}
	name := topicNames[s.rand.IntN(len(topicNames))]
	switch s.rand.IntN(7) {
	case 0, 1:
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1+s.rand.Int32N(3), 1
		req.Topics = []kmsg.CreateTopicsRequestTopic{t}
		op := s.history.call(s.now, topicOp{create: true, name: name})
		n.do(func(core *controller.Core, now time.Time) {
			core.CreateTopics(now, req, func(resp *kmsg.CreateTopicsResponse, err error) {
				code := topLevelCode(err)
				if err == nil && len(resp.Topics) == 1 {
					code = resp.Topics[0].ErrorCode
				}
				s.history.answer(op, s.now, code)
			})
		})
	case 2:
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(6)
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = &name
		req.Topics = []kmsg.DeleteTopicsRequestTopic{t}
		op := s.history.call(s.now, topicOp{name: name})
		n.do(func(core *controller.Core, now time.Time) {
			core.DeleteTopics(now, req, func(resp *kmsg.DeleteTopicsResponse, err error) {
				code := topLevelCode(err)
				if err == nil && len(resp.Topics) == 1 {
					code = resp.Topics[0].ErrorCode
				}
				s.history.answer(op, s.now, code)
			})
		})
	case 3:
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = name, 2+s.rand.Int32N(4)
		req.Topics = []kmsg.CreatePartitionsRequestTopic{t}
		n.do(func(core *controller.Core, now time.Time) {
			core.CreatePartitions(now, req, func(*kmsg.CreatePartitionsResponse, error) {})
		})
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
		n.do(func(core *controller.Core, now time.Time) {
			core.IncrementalAlterConfigs(now, req, func(*kmsg.IncrementalAlterConfigsResponse, error) {})
		})
	case 5:
		// metadata.version to the level it has: accepted, and writes
		// nothing new.
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(1)
		f := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		f.Feature, f.MaxVersionLevel = controller.MetadataVersionFeature, controller.LatestMetadataVersion
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{f}
		n.do(func(core *controller.Core, now time.Time) {
			core.UpdateFeatures(now, req, func(*kmsg.UpdateFeaturesResponse, error) {})
		})
	case 6:
		s.upgradeKRaftVersion(n)
	}
}

// upgradeKRaftVersion asks for kraft.version 1 (kafka-features upgrade
// --feature kraft.version=1), at times validate-only: the controller hands
// it to the quorum, which upgrades a static quorum once every voter has
// sent it UpdateRaftVoter, and takes it as done in a dynamic one.
func (s *Sim) upgradeKRaftVersion(n *simNode) {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.SetVersion(1)
	req.ValidateOnly = s.rand.IntN(3) == 0
	f := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	f.Feature, f.MaxVersionLevel, f.UpgradeType = controller.KRaftVersionFeature, 1, 1
	req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{f}
	n.do(func(core *controller.Core, now time.Time) {
		core.UpdateFeatures(now, req, func(resp *kmsg.UpdateFeaturesResponse, err error) {
			if err == nil && resp.ErrorCode == 0 && !req.ValidateOnly {
				s.stats.KRaftUpgrades++
			}
		})
	})
}

// topLevelCode is the Kafka error code of an operation that failed as a
// whole; NOT_CONTROLLER (and a timeout) leave its outcome unknown.
func topLevelCode(err error) int16 {
	code, _ := controller.ErrorCode(err)
	return code
}

// never is the return time of an operation whose answer never came.
const never = math.MaxInt64
