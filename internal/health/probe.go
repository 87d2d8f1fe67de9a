package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/server"
)

// Target is one controller to ask: its address, and its node id when the
// caller knows it (controller.quorum.voters), else -1.
type Target struct {
	ID   int32
	Addr string
}

// Probe is what one controller said about itself.
type Probe struct {
	Address string `json:"address"`
	// ID is the controller's node id, -1 when no answer named it.
	ID int32 `json:"id"`
	// Voter is whether the voter set holds ID (see Report.VoterSource).
	Voter     bool   `json:"voter"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Role is leader, follower, observer, no-leader (a candidate,
	// prospective or unattached controller: the wire does not tell them
	// apart) or unknown; a kraftd controller whose metrics listener was
	// named says its own (candidate, prospective, unattached, ...).
	Role string `json:"role"`
	// Epoch and LeaderID are the controller's own epoch and the leader it
	// knows (-1: none or unknown).
	Epoch    int32 `json:"epoch"`
	LeaderID int32 `json:"leader_id"`
	// LogEndOffset, Lag, LastFetchAgoMs and LastCaughtUpAgoMs come from the
	// leader's DescribeQuorum; -1 when there is none or it does not list
	// the controller. Lag is behind the highest log end offset seen.
	LogEndOffset      int64 `json:"log_end_offset"`
	Lag               int64 `json:"lag"`
	LastFetchAgoMs    int64 `json:"last_fetch_ago_ms"`
	LastCaughtUpAgoMs int64 `json:"last_caught_up_ago_ms"`
	// LeaderContactAgeMs is how long ago the controller last heard from
	// a leader, from its metrics listener's /readyz (--metrics); -1 when
	// not known.
	LeaderContactAgeMs int64 `json:"leader_contact_age_ms"`
	// ClusterID is from DescribeCluster; "" when refused (Apache refuses
	// it below metadata.version 3.7-IV0) or unreachable.
	ClusterID string `json:"cluster_id"`
	// MetadataVersion is the finalized level as this controller has it.
	MetadataVersion string `json:"metadata_version"`
	// SupportedMetadataVersion is the newest metadata.version the
	// controller's software supports: its release line, as close to a
	// software version as the wire tells.
	SupportedMetadataVersion string `json:"supported_metadata_version"`

	given        bool      // a target of Ask, not found in an answer
	registered   []Address // DescribeCluster's controllers
	knownLeader  Address   // the leader's endpoint from Fetch (port 0: none)
	kraftVersion int16
	quorum       *kmsg.DescribeQuorumResponseTopicPartition // when it answered as leader
	nodes        []kmsg.DescribeQuorumResponseNode
}

// Address is a controller's endpoint.
type Address struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

func (a Address) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port))) }

// ask sends every request of a probe to the one controller at t.Addr over
// one connection, bounded by timeout; any failure to get an answer makes
// the controller unreachable, with the first error.
func ask(ctx context.Context, t Target, sec *server.ClientSecurity, timeout time.Duration) *Probe {
	p := &Probe{Address: t.Addr, ID: t.ID, Role: "unknown", Epoch: -1, LeaderID: -1, LogEndOffset: -1, Lag: -1,
		LastFetchAgoMs: -1, LastCaughtUpAgoMs: -1, LeaderContactAgeMs: -1, MetadataVersion: "unknown", SupportedMetadataVersion: "unknown"}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(t.Addr), kgo.ClientID("kraftd-status"), kgo.DialTimeout(timeout)}
	if sec.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(sec.TLS.Clone()))
	}
	if sec.SASL != nil {
		opts = append(opts, kgo.SASL(sec.SASL))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	defer cl.Close()
	b := cl.SeedBrokers()[0]
	for _, step := range []func(context.Context, *kgo.Broker, *Probe) error{askVersions, askCluster, askEpoch, askQuorum} {
		if err := step(ctx, b, p); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no answer within %s", timeout)
			}
			p.Error = err.Error()
			return p
		}
		p.Reachable = true
	}
	return p
}

func askVersions(ctx context.Context, b *kgo.Broker, p *Probe) error {
	req := kmsg.NewPtrApiVersionsRequest()
	// kgo sends an ApiVersions at the version it is set to: v3 carries
	// the features.
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kraftd-status", "1"
	resp, err := b.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(av.ErrorCode); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	for _, f := range av.SupportedFeatures {
		if f.Name == controller.MetadataVersionFeature {
			p.SupportedMetadataVersion = controller.MetadataVersionName(f.MaxVersion)
		}
	}
	for _, f := range av.FinalizedFeatures {
		switch f.Name {
		case controller.MetadataVersionFeature:
			p.MetadataVersion = fmt.Sprintf("%s (level %d)", controller.MetadataVersionName(f.MaxVersionLevel), f.MaxVersionLevel)
		case controller.KRaftVersionFeature:
			p.kraftVersion = f.MaxVersionLevel
		}
	}
	return nil
}

// askCluster reads the cluster id and the registered controllers. A
// refusal (a metadata.version below 3.7-IV0) leaves them unknown.
func askCluster(ctx context.Context, b *kgo.Broker, p *Probe) error {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2 // controllers
	resp, err := b.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("DescribeCluster: %w", err)
	}
	dc := resp.(*kmsg.DescribeClusterResponse)
	if dc.ErrorCode != 0 {
		return nil
	}
	p.ClusterID = dc.ClusterID
	for _, c := range dc.Brokers {
		p.registered = append(p.registered, Address{ID: c.NodeID, Host: c.Host, Port: c.Port})
	}
	return nil
}

// askEpoch learns the controller's epoch and the leader it knows from a
// Fetch at leader epoch 0, which it refuses (FENCED_LEADER_EPOCH, or
// NOT_LEADER_OR_FOLLOWER in epoch 0) with both in CurrentLeader.
func askEpoch(ctx context.Context, b *kgo.Broker, p *Probe) error {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.ReplicaState.ID = -1, -1
	req.MaxWaitMillis = 0
	part := kmsg.NewFetchRequestTopicPartition()
	part.CurrentLeaderEpoch, part.FetchOffset, part.LastFetchedEpoch = 0, 0, 0
	req.Topics = []kmsg.FetchRequestTopic{{Topic: quorum.MetadataTopic, TopicID: quorum.MetadataTopicID, Partitions: []kmsg.FetchRequestTopicPartition{part}}}
	resp, err := b.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("Fetch: %w", err)
	}
	f := resp.(*kmsg.FetchResponse)
	if f.ErrorCode != 0 || len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 1 {
		// An authorizer may deny Fetch (CLUSTER_ACTION): the view stays
		// unknown, the controller is still reachable.
		return nil
	}
	cur := f.Topics[0].Partitions[0].CurrentLeader
	p.Epoch, p.LeaderID = cur.LeaderEpoch, cur.LeaderID
	for _, e := range f.Brokers {
		if e.NodeID == cur.LeaderID {
			p.knownLeader = Address{ID: e.NodeID, Host: e.Host, Port: e.Port}
		}
	}
	return nil
}

// askQuorum asks DescribeQuorum: only the leader answers it.
func askQuorum(ctx context.Context, b *kgo.Broker, p *Probe) error {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = quorum.MetadataTopic
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{t}
	resp, err := b.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("DescribeQuorum: %w", err)
	}
	q := resp.(*kmsg.DescribeQuorumResponse)
	if q.ErrorCode != 0 || len(q.Topics) != 1 || len(q.Topics[0].Partitions) != 1 || q.Topics[0].Partitions[0].ErrorCode != 0 {
		return nil
	}
	part := q.Topics[0].Partitions[0]
	p.quorum, p.nodes = &part, q.Nodes
	p.ID, p.Role, p.Epoch, p.LeaderID = part.LeaderID, "leader", part.LeaderEpoch, part.LeaderID
	return nil
}
