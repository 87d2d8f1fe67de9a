package embed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/server"
	"github.com/kraftd/kraftd/storage"
)

// ErrStopped is returned to requests that arrive while the node shuts down.
var ErrStopped = node.ErrStopped

// ErrNotController is returned to proposals when this node is, or stops
// being, anything but the active controller.
var ErrNotController = node.ErrNotController

// PartitionDir is the metadata log's directory inside metadata.log.dir.
const PartitionDir = node.PartitionDir

// Disk is a formatted metadata.log.dir, locked for this process.
type Disk = node.Disk

// OpenDisk locks and opens cfg's metadata.log.dir, once CheckLogDirs found
// every log directory of this node and cluster.
func OpenDisk(fsys storage.FS, cfg *server.Config, log zerolog.Logger) (*Disk, error) {
	return OpenDiskWith(fsys, cfg, DiskOverrides{}, log)
}

// DiskOverrides are an operator's answers, given for one start, to damage
// OpenDisk otherwise refuses. They are start flags, not configuration
// keys, so that a choice made once is not made again silently.
type DiskOverrides struct {
	TruncateCorruptLog bool // cut the log at damage before its active segment
	AcceptLostLog      bool // start a directory whose log was lost with an empty one
}

// OpenDiskWith is OpenDisk with overrides.
func OpenDiskWith(fsys storage.FS, cfg *server.Config, o DiskOverrides, log zerolog.Logger) (*Disk, error) {
	if err := server.CheckLogDirs(fsys, cfg, ""); err != nil {
		return nil, err
	}
	d, err := node.OpenDisk(fsys, node.DiskConfig{Dir: cfg.MetadataLogDir, NodeID: cfg.NodeID, SegmentBytes: cfg.SegmentBytes,
		TruncateCorruptLog: o.TruncateCorruptLog, AcceptLostLog: o.AcceptLostLog}, log)
	return d, asConfigError(err)
}

func asConfigError(err error) error {
	var se *node.SettingError
	if errors.As(err, &se) {
		return &server.ConfigError{Key: se.Key, Err: se.Err}
	}
	return err
}

// Node assembles one kraftd controller for the server: the runtime (package
// node) driven by its production Runner, the peer client it sends through,
// and the controller its committed records are replayed into. It implements
// Backend for the request handlers.
type Node struct {
	cfg    *server.Config
	log    zerolog.Logger
	disk   *Disk
	runner *node.Runner
	peers  *peer.Client
	ctl    *controller.Controller
	stop   chan struct{}
	// timedOutHeartbeats counts brokers fenced for an expired session.
	timedOutHeartbeats atomic.Int64
	// clusters remembers peers seen with another cluster id.
	clusters *peer.Clusters
}

// NewNode builds the node's parts over an opened disk. Nothing runs until
// Run.
func NewNode(cfg *server.Config, disk *Disk, log zerolog.Logger) (*Node, error) {
	return NewMeteredNode(cfg, disk, nil, log)
}

// NewMeteredNode is NewNode whose runtime tells meter what it measures
// (nil: nothing is measured).
func NewMeteredNode(cfg *server.Config, disk *Disk, meter node.Meter, log zerolog.Logger) (*Node, error) {
	n := &Node{cfg: cfg, log: log, disk: disk, ctl: controller.New(cfg.NodeID, disk.Bootstrap), stop: make(chan struct{}),
		clusters: peer.NewClusters(disk.Meta.ClusterID, log)}
	n.ctl.UseStaticConfig(cfg.Static)
	n.peers = peer.New(fmt.Sprintf("raft-client-%d", cfg.NodeID), time.Duration(cfg.RequestTimeoutMs)*time.Millisecond, n.deliverPeerResult, log)
	handshake, mechanism, err := cfg.PeerSecurity()
	if err != nil {
		return nil, err
	}
	n.peers.UseSecurity(handshake, mechanism)
	var own []quorum.Endpoint
	for _, e := range cfg.ControllerEndpoints() {
		own = append(own, quorum.Endpoint{Name: e.Name, Host: e.Host, Port: e.Port})
	}
	var bootstrap []quorum.Endpoint
	for _, s := range cfg.BootstrapServers {
		host, port, err := server.SplitHostPort(s)
		if err != nil {
			return nil, &server.ConfigError{Key: "controller.quorum.bootstrap.servers", Err: err}
		}
		bootstrap = append(bootstrap, quorum.Endpoint{Host: host, Port: port})
	}
	n.runner, err = node.NewRunner(node.Config{
		NodeID:               cfg.NodeID,
		Voters:               cfg.StaticVoters(),
		Endpoints:            own,
		BootstrapServers:     bootstrap,
		AutoJoin:             cfg.AutoJoin,
		ElectionTimeoutMs:    int64(cfg.ElectionTimeoutMs),
		FetchTimeoutMs:       int64(cfg.FetchTimeoutMs),
		ElectionBackoffMaxMs: int64(cfg.ElectionBackoffMaxMs),
		RequestTimeoutMs:     int64(cfg.RequestTimeoutMs),
		RetryBackoffMs:       int64(cfg.RetryBackoffMs),
		IdleIntervalMs:       int64(cfg.IdleIntervalMs),
		SilenceTimeoutMs:     int64(cfg.SilenceTimeoutMs),
		FetchMaxWaitMs:       cfg.FetchMaxWaitMs,
		Snapshots: node.SnapshotPolicy{MaxBytes: cfg.SnapshotBytes, IntervalMs: cfg.SnapshotIntervalMs,
			RetentionBytes: cfg.MaxRetentionBytes, RetentionMs: cfg.MaxRetentionMs, Gzip: cfg.SnapshotGzip},
		Meter: meter,
	}, disk, n.ctl, peerBook{Client: n.peers, listener: cfg.ControllerListenerName[0]}, log)
	if err != nil {
		return nil, asConfigError(err)
	}
	n.attachController()
	return n, nil
}

// deliverPeerResult is called by the peer client's goroutines.
func (n *Node) deliverPeerResult(r peer.Result) {
	if r.Err != nil {
		n.log.Debug().Err(r.Err).Int32("peer", r.NodeID).Str("api", kmsg.NameForKey(r.Request.Key())).Msg("peer request failed")
	} else if e := n.log.Trace(); e.Enabled() {
		e.Int32("peer", r.NodeID).Str("api", kmsg.NameForKey(r.Request.Key())).Interface("response", r.Response).Msg("peer response")
	}
	m := quorum.Message{From: r.NodeID, ReqID: r.Tag, Response: r.Response}
	if r.Err != nil {
		m.Response, m.Err = nil, r.Err
	} else {
		n.clusters.NoteResponse(r.NodeID, n.peers.Addr(r.NodeID), r.Response)
	}
	n.runner.DeliverPeer(m)
}

// Controller is the node's metadata controller.
func (n *Node) Controller() *controller.Controller { return n.ctl }

// Status is the quorum's state as of the last Ready.
func (n *Node) Status() quorum.Status { return n.runner.Status() }

// CaughtUp is closed once the controller has first replayed the metadata
// log up to a known high watermark; the authorizer waits for it.
func (n *Node) CaughtUp() <-chan struct{} { return n.runner.CaughtUp() }

// Run drives the node until Stop; it returns the first fatal error (a disk
// failure or a safety violation), after which the process must exit.
func (n *Node) Run() error {
	go n.runController()
	return n.runner.Run()
}

// Stop resigns leadership gracefully (EndQuorumEpoch), then stops the loop.
func (n *Node) Stop() error {
	select {
	case <-n.stop:
	default:
		close(n.stop)
	}
	return n.runner.Stop()
}

// Propose writes records through the quorum at the active controller and
// waits until they commit. It returns the offset of the first record (a
// broker's epoch is the offset of its registration record).
func (n *Node) Propose(ctx context.Context, records []metadata.Record) (int64, error) {
	type result struct {
		first int64
		err   error
	}
	done := make(chan result, 1)
	p := &node.Proposal{Records: records, Done: func(first int64, err error) { done <- result{first, err} }}
	if err := n.runner.Propose(ctx, p); err != nil {
		return -1, err
	}
	select {
	case r := <-done:
		if r.err != nil {
			return -1, r.err
		}
		return r.first, nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// Raft implements Backend.
func (n *Node) Raft(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	remote := ""
	if r.Remote != nil {
		remote = r.Remote.String()
	}
	n.clusters.NoteRequest(r.Body, remote)
	return n.runner.Raft(ctx, r.Body)
}

// UnresolvedPeers lists the peers whose host name did not resolve at the
// last attempt to reach them, with the reason.
func (n *Node) UnresolvedPeers() map[int32]string { return n.peers.Unresolved() }

// PeerClusterMismatches lists the peers seen in the last 30 s with
// another cluster id than this node's, in either direction.
func (n *Node) PeerClusterMismatches() []peer.ClusterMismatch { return n.clusters.Mismatches() }

// ClusterID implements Backend.
func (n *Node) ClusterID() string { return n.disk.Meta.ClusterID }

// Features implements Backend.
func (n *Node) Features() (map[string]int16, int64) {
	levels, epoch := n.ctl.Features()
	// As Apache's controller does (KRaftMetadataCache.features), report the
	// quorum's own kraft.version, and only when it is above 0: a static
	// quorum lists no kraft.version.
	if kv := n.Status().KRaftVersion; kv > 0 {
		levels[controller.KRaftVersionFeature] = kv
	}
	return levels, epoch
}

// ScramCredential implements sasl.ScramCredentialSource.
func (n *Node) ScramCredential(user string, mechanism int8) (metadata.UserScramCredentialRecord, bool) {
	return n.ctl.ScramCredential(user, mechanism)
}

// ActiveController implements Backend.
func (n *Node) ActiveController() int32 { return n.Status().LeaderID }

// Controllers implements Backend: the registered controllers with their
// endpoint on listener. Until a controller has registered, the voters from
// the configuration stand in, so tools can find the leader of a new quorum.
func (n *Node) Controllers(listener string) []kmsg.DescribeClusterResponseBroker {
	var out []kmsg.DescribeClusterResponseBroker
	for id, reg := range n.ctl.RegisteredControllers() {
		for _, e := range reg.EndPoints {
			if e.Name == listener {
				out = append(out, kmsg.DescribeClusterResponseBroker{NodeID: id, Host: e.Host, Port: int32(e.Port), Rack: nil})
			}
		}
	}
	if len(out) > 0 {
		return sortBrokers(out)
	}
	for _, v := range n.Status().Voters {
		for _, e := range v.Endpoints {
			if e.Name == listener {
				out = append(out, kmsg.DescribeClusterResponseBroker{NodeID: v.ID, Host: e.Host, Port: int32(e.Port)})
			}
		}
	}
	return sortBrokers(out)
}

func sortBrokers(b []kmsg.DescribeClusterResponseBroker) []kmsg.DescribeClusterResponseBroker {
	sort.Slice(b, func(i, j int) bool { return b[i].NodeID < b[j].NodeID })
	return b
}

// peerBook is the peer client as the node runtime drives it: it learns
// where each voter of the current voter set listens, on the controller
// listener, as the set changes.
type peerBook struct {
	*peer.Client
	listener string
}

// SetEndpoints implements node.Endpoints. An endpoint without a name (a
// bootstrap server, a leader's endpoint from a Fetch answer) is on the
// controller listener.
func (b peerBook) SetEndpoints(id int32, endpoints []quorum.Endpoint) {
	for _, e := range endpoints {
		if e.Name == b.listener || e.Name == "" {
			b.SetAddress(id, net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
			return
		}
	}
}
