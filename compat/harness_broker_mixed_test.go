package compat

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerQuorumRelease is the metadata.version a quorum mixing kraftd and
// Apache controllers is formatted with: the newest that Apache 4.1 serves,
// so that the 4.1.2 and 4.4.0 runs of the same test share one level.
const brokerQuorumRelease = "4.1-IV1"

// quorumMember is one controller of a static quorum that mixes kraftd and
// Apache Kafka controllers; exactly one of Apache and Kraftd is set.
type quorumMember struct {
	Apache *ApacheNode
	Kraftd *kraftdNode
}

func (m *quorumMember) ID() int32 {
	if m.Apache != nil {
		return int32(m.Apache.NodeID)
	}
	return m.Kraftd.ID
}

func (m *quorumMember) Kind() string {
	if m.Apache != nil {
		return "Apache"
	}
	return "kraftd"
}

func (m *quorumMember) String() string { return fmt.Sprintf("%s %d", m.Kind(), m.ID()) }

func (m *quorumMember) Addr() string {
	if m.Apache != nil {
		return m.Apache.Addr()
	}
	return m.Kraftd.Addr()
}

// Proc is the member's process, nil before its first start.
func (m *quorumMember) Proc() *Process {
	if m.Apache != nil {
		return m.Apache.Proc
	}
	return m.Kraftd.Proc
}

// Start starts the member, or restarts it on the same directory.
func (m *quorumMember) Start(t *testing.T) {
	t.Helper()
	switch {
	case m.Apache != nil:
		m.Apache.Start(t)
	case m.Kraftd.Proc == nil:
		m.Kraftd.start(t)
	default:
		m.Kraftd.Proc.Start()
	}
}

// newBrokerQuorum writes and formats a static quorum whose members (node
// ids 1, 2, ...) are kraftd or Apache controllers of version as kinds says
// ("kraftd" or "Apache"), all at brokerQuorumRelease. It returns the
// members unstarted, the controller.quorum.voters value and the cluster id.
func newBrokerQuorum(t *testing.T, version string, kinds ...string) ([]*quorumMember, string, string) {
	t.Helper()
	ports := FreePorts(t, len(kinds))
	var voterList []string
	for i, p := range ports {
		voterList = append(voterList, fmt.Sprintf("%d@%s", i+1, Addr(p)))
	}
	voters, clusterID := strings.Join(voterList, ","), NewUUID()
	var members []*quorumMember
	for i, kind := range kinds {
		id := int32(i + 1)
		switch kind {
		case "Apache":
			n := NewApacheController(t, ApacheOptions{Version: version, NodeID: int(id), Port: ports[i], Voters: voters})
			n.Format(t, clusterID, "--release-version", brokerQuorumRelease)
			members = append(members, &quorumMember{Apache: n})
		case "kraftd":
			n := &kraftdNode{ID: id, Port: ports[i], Dir: filepath.Join(t.TempDir(), "metadata")}
			n.Conf = WriteKraftdConfig(t, id, n.Addr(), n.Dir, map[string]string{"controller.quorum.voters": voters})
			format := NewProcess(t, fmt.Sprintf("kraftd-format-%d", id), KraftdBinary(t), "format", "--config", n.Conf,
				"--cluster-id", clusterID, "--release-version", brokerQuorumRelease)
			format.Start()
			if err := format.Wait(time.Minute); err != nil {
				t.Fatalf("format kraftd %d: %v\n%s", id, err, format.Output())
			}
			members = append(members, &quorumMember{Kraftd: n})
		default:
			t.Fatalf("compat: unknown controller kind %q", kind)
		}
	}
	return members, voters, clusterID
}

// startBrokerQuorum starts every member and stops them all together when
// the test ends (a quorum's last members wait for their peers on SIGTERM).
func startBrokerQuorum(t *testing.T, members []*quorumMember) {
	t.Helper()
	for _, m := range members {
		m.Start(t)
	}
	t.Cleanup(func() {
		var ps []*Process
		for _, m := range members {
			ps = append(ps, m.Proc())
		}
		StopAll(ps...)
	})
}

func memberByID(members []*quorumMember, id int32) *quorumMember {
	for _, m := range members {
		if m.ID() == id {
			return m
		}
	}
	return nil
}

// CreateTopic sends CreateTopics to a broker, which forwards it to the
// active controller in an Envelope, and retries while no controller can
// take it (NOT_CONTROLLER, timeouts during a failover). A topic that
// already exists counts as created: an earlier try may have committed.
func CreateTopic(t testing.TB, brokerAddr, name string, partitions int32, replicationFactor int16, configs map[string]string) {
	t.Helper()
	Eventually(t, ReadyTimeout, "create topic "+name, nil, func() error {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.TimeoutMillis = 15000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, replicationFactor
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, &v
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
		r, err := Request(brokerAddr, req)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != 1 {
			return fmt.Errorf("CreateTopics answered %d topics", len(resp.Topics))
		}
		switch code := resp.Topics[0].ErrorCode; code {
		case 0, kerr.TopicAlreadyExists.Code:
			return nil
		case kerr.NotController.Code, kerr.RequestTimedOut.Code, kerr.UnknownServerError.Code,
			// A broker that missed its heartbeats on a loaded machine is
			// fenced until its next one; it cannot take a replica meanwhile.
			kerr.InvalidReplicationFactor.Code:
			msg := ""
			if m := resp.Topics[0].ErrorMessage; m != nil {
				msg = ": " + *m
			}
			return fmt.Errorf("CreateTopics %s: %v%s", name, kerr.ErrorForCode(code), msg)
		default:
			failNow(t, "CreateTopics %s: %v", name, kerr.ErrorForCode(code))
			return nil
		}
	})
}
