package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/server"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show a controller quorum at a glance: leader, epoch, high watermark, each replica's lag, controllers, brokers and metadata.version",
		Description: "Asks a controller over the Kafka protocol (ApiVersions, DescribeCluster, DescribeQuorum at the leader), " +
			"as kafka-metadata-quorum.sh does, over PLAINTEXT or what --command-config says the listener needs. Brokers are counted from a controller's metrics listener " +
			"(kraftd.metrics.listener) when --metrics names it: no Kafka request tells a client a controller's broker registrations.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-controller", Required: true, Usage: "host:port of any controller of the quorum"},
			&cli.StringFlag{Name: "command-config", Usage: "a file of Apache client properties for a secured controller listener " +
				"(security.protocol SSL, SASL_PLAINTEXT or SASL_SSL; ssl.truststore.*, ssl.keystore.* for a client certificate, " +
				"ssl.endpoint.identification.algorithm; sasl.mechanism PLAIN or SCRAM-SHA-256/512 with sasl.jaas.config), as kafka-metadata-quorum.sh reads"},
			&cli.StringFlag{Name: "metrics", Usage: "http://host:port of a controller's kraftd.metrics.listener, to count brokers"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "how long to wait for the answers"},
		},
		Action: runStatus,
	}
}

// quorumStatus is what `kraftd status` reports.
type quorumStatus struct {
	ClusterID       string              `json:"cluster_id"`
	LeaderID        int32               `json:"leader_id"`
	LeaderEpoch     int32               `json:"leader_epoch"`
	HighWatermark   int64               `json:"high_watermark"`
	MetadataVersion string              `json:"metadata_version"`
	KRaftVersion    int16               `json:"kraft_version"`
	Voters          []replicaStatus     `json:"voters"`
	Observers       []replicaStatus     `json:"observers"`
	Controllers     []controllerAddress `json:"controllers"`
	// Brokers is nil when no metrics listener was named.
	Brokers *brokerCounts `json:"brokers,omitempty"`
}

type replicaStatus struct {
	ID           int32  `json:"id"`
	DirectoryID  string `json:"directory_id"`
	LogEndOffset int64  `json:"log_end_offset"`
	// Lag is the leader's log end offset minus this replica's.
	Lag int64 `json:"lag"`
	// LastFetchAgoMs and LastCaughtUpAgoMs are how long before the
	// leader answered that the replica last fetched and was last caught
	// up; -1 when never.
	LastFetchAgoMs    int64 `json:"last_fetch_ago_ms"`
	LastCaughtUpAgoMs int64 `json:"last_caught_up_ago_ms"`
}

type controllerAddress struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

type brokerCounts struct {
	Active             int `json:"active"`
	Fenced             int `json:"fenced"`
	ControlledShutdown int `json:"in_controlled_shutdown"`
}

func runStatus(c *cli.Context) error {
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	sec, err := clientSecurity(c.String("command-config"))
	if err != nil {
		return cli.Exit(fmt.Sprintf("kraftd status: --command-config %s: %v", c.String("command-config"), err), 2)
	}
	st, err := gatherStatus(ctx, c.String("bootstrap-controller"), sec)
	if err != nil {
		return cli.Exit(fmt.Sprintf("kraftd status: %v", err), 1)
	}
	if url := c.String("metrics"); url != "" {
		b, err := brokersFromMetrics(ctx, url)
		if err != nil {
			return cli.Exit(fmt.Sprintf("kraftd status: --metrics %s: %v", url, err), 1)
		}
		st.Brokers = b
	}
	if c.Bool("json") {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	printStatus(os.Stdout, st)
	return nil
}

// clientSecurity reads the --command-config file; none is PLAINTEXT.
func clientSecurity(path string) (*server.ClientSecurity, error) {
	if path == "" {
		return &server.ClientSecurity{Protocol: "PLAINTEXT"}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props, err := server.ParseProperties(f)
	if err != nil {
		return nil, err
	}
	return server.ParseClientSecurity(props)
}

// ask sends req to the one controller at addr, over the listener's
// security protocol.
func ask(ctx context.Context, addr string, sec *server.ClientSecurity, req kmsg.Request) (kmsg.Response, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("kraftd-status")}
	if sec.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(sec.TLS.Clone()))
	}
	if sec.SASL != nil {
		opts = append(opts, kgo.SASL(sec.SASL))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// gatherStatus asks the bootstrap controller for the features and the
// controllers, then the leader for the quorum.
func gatherStatus(ctx context.Context, bootstrap string, sec *server.ClientSecurity) (*quorumStatus, error) {
	st := &quorumStatus{LeaderID: -1, Voters: []replicaStatus{}, Observers: []replicaStatus{}, Controllers: []controllerAddress{}}
	avReq := kmsg.NewPtrApiVersionsRequest()
	// kgo sends an ApiVersions as it is set: v3 carries the features.
	avReq.SetVersion(3)
	avReq.ClientSoftwareName, avReq.ClientSoftwareVersion = "kraftd-status", "0.1.0"
	resp, err := ask(ctx, bootstrap, sec, avReq)
	if err != nil {
		return nil, fmt.Errorf("ApiVersions to %s: %w", bootstrap, err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	st.MetadataVersion = "unknown"
	for _, f := range av.FinalizedFeatures {
		switch f.Name {
		case controller.MetadataVersionFeature:
			st.MetadataVersion = fmt.Sprintf("%s (level %d)", controller.MetadataVersionName(f.MaxVersionLevel), f.MaxVersionLevel)
		case controller.KRaftVersionFeature:
			st.KRaftVersion = f.MaxVersionLevel
		}
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.EndpointType = 2 // controllers
	resp, err = ask(ctx, bootstrap, sec, dc)
	if err != nil {
		return nil, fmt.Errorf("DescribeCluster to %s: %w", bootstrap, err)
	}
	cluster := resp.(*kmsg.DescribeClusterResponse)
	if err := kerr.ErrorForCode(cluster.ErrorCode); err != nil {
		return nil, fmt.Errorf("DescribeCluster to %s: %w", bootstrap, err)
	}
	st.ClusterID = cluster.ClusterID
	leaderAddr := bootstrap
	for _, b := range cluster.Brokers {
		st.Controllers = append(st.Controllers, controllerAddress{ID: b.NodeID, Host: b.Host, Port: b.Port})
		if b.NodeID == cluster.ControllerID {
			leaderAddr = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
	}
	dq := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	dq.Topics = []kmsg.DescribeQuorumRequestTopic{t}
	resp, err = ask(ctx, leaderAddr, sec, dq)
	if err != nil {
		return nil, fmt.Errorf("DescribeQuorum to %s: %w", leaderAddr, err)
	}
	return st, fillQuorum(st, resp.(*kmsg.DescribeQuorumResponse), leaderAddr)
}

func fillQuorum(st *quorumStatus, q *kmsg.DescribeQuorumResponse, addr string) error {
	if err := kerr.ErrorForCode(q.ErrorCode); err != nil {
		return fmt.Errorf("DescribeQuorum to %s: %w", addr, err)
	}
	if len(q.Topics) != 1 || len(q.Topics[0].Partitions) != 1 {
		return fmt.Errorf("DescribeQuorum to %s: the answer holds no __cluster_metadata partition", addr)
	}
	p := q.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return fmt.Errorf("DescribeQuorum to %s: %w", addr, err)
	}
	st.LeaderID, st.LeaderEpoch, st.HighWatermark = p.LeaderID, p.LeaderEpoch, p.HighWatermark
	leaderEnd := int64(-1)
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			leaderEnd = v.LogEndOffset
		}
	}
	// The leader stamps its own entry with the time it answered.
	now := int64(-1)
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			now = v.LastFetchTimestamp
		}
	}
	conv := func(in []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []replicaStatus {
		out := []replicaStatus{}
		for _, r := range in {
			out = append(out, replicaStatus{ID: r.ReplicaID, DirectoryID: uuidString(r.ReplicaDirectoryID), LogEndOffset: r.LogEndOffset,
				Lag: max(leaderEnd-r.LogEndOffset, 0), LastFetchAgoMs: ago(now, r.LastFetchTimestamp), LastCaughtUpAgoMs: ago(now, r.LastCaughtUpTimestamp)})
		}
		return out
	}
	st.Voters, st.Observers = conv(p.CurrentVoters), conv(p.Observers)
	return nil
}

func ago(now, ts int64) int64 {
	if now < 0 || ts < 0 {
		return -1
	}
	return max(now-ts, 0)
}

func uuidString(id [16]byte) string {
	if id == [16]byte{} {
		return ""
	}
	return kmsgUUID(id)
}

var errNoBrokerGauges = errors.New("the answer holds no kafka_controller_kafkacontroller_activebrokercount: is it a kraftd metrics listener?")
