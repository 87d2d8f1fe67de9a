package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/quorum"
)

// Source is the node's published state, read at each scrape and readiness
// check; embed.Node implements it. Its methods must be safe from any
// goroutine and cheap enough for a scrape every few seconds.
type Source interface {
	// NodeID is this controller's node.id.
	NodeID() int32
	// Status is the quorum's state as of the runtime's last Ready.
	Status() quorum.Status
	// Applied is the offset of the last record replayed into the image.
	Applied() int64
	// Cluster counts the committed image.
	Cluster() controller.ClusterStats
	// HeartbeatAges is, on the active controller, how long ago each
	// broker's last heartbeat arrived; nil elsewhere.
	HeartbeatAges() map[int32]time.Duration
	// TimedOutHeartbeats counts the brokers this node fenced because
	// their session expired.
	TimedOutHeartbeats() int64
	// PeerTraffic is the raft client's traffic with each peer.
	PeerTraffic() map[int32]peer.Traffic
	// PeerClusterMismatches lists the peers seen lately with another
	// cluster id.
	PeerClusterMismatches() []peer.ClusterMismatch
	// UnresolvedPeers lists the peers whose host name did not resolve at
	// the last attempt, with the reason.
	UnresolvedPeers() map[int32]string
}

// collector turns a Source into Apache-named metrics at each scrape. It is
// an unchecked collector: series come and go with the role (Apache adds
// number-of-observers only on a leader), so Describe names none.
type collector struct {
	m   *Metrics
	src Source
	// ready judges readiness for the kraftd_ready gauge.
	ready func() Readiness
}

func (c *collector) Describe(chan<- *prometheus.Desc) {}

// emit sends one series of name (no labels but those given as pairs).
func emit(ch chan<- prometheus.Metric, typ prometheus.ValueType, name, help string, v float64, labelPairs ...string) {
	var names, values []string
	for i := 0; i+1 < len(labelPairs); i += 2 {
		names, values = append(names, labelPairs[i]), append(values, labelPairs[i+1])
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, names, nil), typ, v, values...)
}

func gauge(ch chan<- prometheus.Metric, name, help string, v float64, labelPairs ...string) {
	emit(ch, prometheus.GaugeValue, name, help, v, labelPairs...)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	now := c.m.now()
	st := c.src.Status()
	c.collectRaft(ch, st, now)
	c.collectController(ch, st, now)
	c.collectChannel(ch)
	r := c.ready()
	gauge(ch, "kraftd_ready", "1 when /readyz answers ready: "+readyRule, boolFloat(r.Ready))
	gauge(ch, "kraftd_quorum_peer_cluster_id_mismatch", "Peers seen in the last 30 s with another cluster id than this node's: "+
		"a request of theirs carried one, or they answered this node INCONSISTENT_CLUSTER_ID.", float64(r.PeersOfAnotherCluster))
	gauge(ch, "kraftd_quorum_peers_unresolved", "Peers whose host name did not resolve at the last attempt to reach them.", float64(len(r.Unresolved)))
	if r.LeaderContactAgeMs >= 0 {
		gauge(ch, "kraftd_raft_leader_contact_age_seconds",
			"How long ago this node last heard from its leader (a leader: since a majority of voters fetched).",
			float64(r.LeaderContactAgeMs)/1000)
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// apacheState is Apache's name of a role (KafkaRaftMetrics'
// current-state). Apache's Resigned state answers none of its questions
// but the last, so it reads unattached, as kraftd's does here.
func apacheState(s quorum.SoftState) string {
	switch s.Role {
	case quorum.RoleLeader:
		return "leader"
	case quorum.RoleProspective:
		if s.VotedID >= 0 {
			return "prospective-voted"
		}
		return "prospective"
	case quorum.RoleCandidate:
		return "candidate"
	case quorum.RoleFollower:
		if !s.IsVoter {
			return "observer"
		}
		return "follower"
	case quorum.RoleUnattached:
		if s.VotedID >= 0 {
			return "unattached-voted"
		}
	}
	return "unattached"
}

const raftPrefix = "kafka_server_raftmetrics_"

func (c *collector) collectRaft(ch chan<- prometheus.Metric, st quorum.Status, now time.Time) {
	self := c.src.NodeID()
	gauge(ch, raftPrefix+"current_state", "The current state of this member (Apache's current-state, as Strimzi's rule labels it).",
		1, "current_state", apacheState(st.SoftState))
	gauge(ch, raftPrefix+"current_leader", "The current quorum leader's id; -1 indicates unknown.", float64(st.LeaderID))
	vote := st.VotedID
	if st.Role == quorum.RoleLeader || st.Role == quorum.RoleCandidate {
		vote = self
	}
	gauge(ch, raftPrefix+"current_vote", "The current voted id; -1 indicates not voted for anyone.", float64(vote))
	gauge(ch, raftPrefix+"current_epoch", "The current quorum epoch.", float64(st.Epoch))
	gauge(ch, raftPrefix+"high_watermark", "The high watermark maintained on this member; -1 if it is unknown.", float64(st.HighWatermark))
	gauge(ch, raftPrefix+"log_end_offset", "The current raft log end offset.", float64(st.EndOffset))
	gauge(ch, raftPrefix+"log_end_epoch", "The current raft log end epoch.", float64(st.LastEpoch))
	gauge(ch, raftPrefix+"number_of_voters", "Number of voters for the KRaft topic partition.", float64(len(st.Voters)))
	unknown := 0
	for _, v := range st.Voters {
		if v.ID != self && len(v.Endpoints) == 0 {
			unknown++
		}
	}
	gauge(ch, raftPrefix+"number_unknown_voter_connections", "Number of voters whose endpoint is not known.", float64(unknown))
	if st.Role == quorum.RoleLeader {
		gauge(ch, raftPrefix+"number_of_observers", "Number of observers being tracked by the KRaft topic partition leader.", float64(st.Observers))
		gauge(ch, raftPrefix+"uncommitted_voter_change", "1 if there is a voter change that has not been committed, 0 otherwise.", boolFloat(st.UncommittedVoterChange))
	}
	m := c.m
	// Strimzi's rules type Apache's *-max as counters, and the JMX exporter
	// (1.x) appends _total to a counter's name: these are the names an
	// Apache controller's series carry, windowed maxima though they are.
	gauge(ch, raftPrefix+"commit_latency_avg", "The average time in milliseconds to commit an entry in the raft log.", m.commitLatency.avg(now))
	emit(ch, prometheus.CounterValue, raftPrefix+"commit_latency_max_total", "The maximum time in milliseconds to commit an entry in the raft log.", m.commitLatency.max(now))
	gauge(ch, raftPrefix+"election_latency_avg", "The average time in milliseconds spent on electing a new leader.", m.electionLatency.avg(now))
	emit(ch, prometheus.CounterValue, raftPrefix+"election_latency_max_total", "The maximum time in milliseconds spent on electing a new leader.", m.electionLatency.max(now))
	gauge(ch, raftPrefix+"append_records_rate", "The average number of records appended per sec by the leader of the raft quorum.", m.appendRecords.rate(now))
	gauge(ch, raftPrefix+"fetch_records_rate", "The average number of records fetched from the leader of the raft quorum.", m.fetchRecords.rate(now))
	gauge(ch, raftPrefix+"poll_idle_ratio_avg", "The ratio of time the raft loop is idle as opposed to waiting for work.", min(1, m.pollIdle.rate(now)))
}

const controllerPrefix = "kafka_controller_kafkacontroller_"

func (c *collector) collectController(ch chan<- prometheus.Metric, st quorum.Status, now time.Time) {
	m := c.m
	active := st.Role == quorum.RoleLeader && st.EpochCommitted
	gauge(ch, controllerPrefix+"activecontrollercount", "1 if this node is the active controller.", boolFloat(active))
	gauge(ch, controllerPrefix+"newactivecontrollerscount", "How many times this node became the active controller.", float64(m.newActive.Load()))
	applied := c.src.Applied()
	gauge(ch, controllerPrefix+"lastappliedrecordoffset", "The offset of the last record replayed into the metadata image.", float64(applied))
	gauge(ch, controllerPrefix+"lastcommittedrecordoffset", "The offset of the last committed record (high watermark - 1).", float64(max(st.HighWatermark-1, -1)))
	if ts := m.lastAppliedTimeMs.Load(); ts >= 0 {
		gauge(ch, controllerPrefix+"lastappliedrecordtimestamp", "The append time (ms since the epoch) of the last replayed record's batch.", float64(ts))
		gauge(ch, controllerPrefix+"lastappliedrecordlagms", "Now minus the append time of the last replayed record's batch, in ms.", float64(max(now.UnixMilli()-ts, 0)))
	}
	gauge(ch, controllerPrefix+"metadataerrorcount", "Committed records the metadata image rejected.", float64(m.metadataErrors.Load()))
	gauge(ch, controllerPrefix+"timedoutbrokerheartbeatcount", "Brokers fenced because their heartbeat session expired.", float64(c.src.TimedOutHeartbeats()))
	cs := c.src.Cluster()
	gauge(ch, controllerPrefix+"activebrokercount", "Registered brokers that are not fenced.", float64(cs.ActiveBrokers))
	gauge(ch, controllerPrefix+"fencedbrokercount", "Registered brokers that are fenced.", float64(cs.FencedBrokers))
	gauge(ch, controllerPrefix+"controlledshutdownbrokercount", "Registered brokers in controlled shutdown.", float64(cs.ControlledShutdownBrokers))
	gauge(ch, controllerPrefix+"globaltopiccount", "Topics in the metadata image.", float64(cs.Topics))
	gauge(ch, controllerPrefix+"globalpartitioncount", "Partitions in the metadata image.", float64(cs.Partitions))
	gauge(ch, controllerPrefix+"offlinepartitionscount", "Partitions without a leader.", float64(cs.OfflinePartitions))
	gauge(ch, controllerPrefix+"preferredreplicaimbalancecount", "Partitions not led by their preferred (first) replica.", float64(cs.ImbalancedPartitions))
	for id, age := range c.src.HeartbeatAges() {
		gauge(ch, controllerPrefix+"timesincelastheartbeatreceivedms", "Time since the active controller last heard a heartbeat from the broker, in ms.",
			float64(age.Milliseconds()), "broker", strconv.Itoa(int(id)))
	}
	gauge(ch, controllerPrefix+"ignoredstaticvoters", "1 if controller.quorum.voters is set but the log's voter set (a VotersRecord) is followed instead.",
		boolFloat(st.IgnoredStaticVoters))
	// Apache's ControllerStats meters, through Strimzi's PerSec rule: the
	// meter's Count as a counter.
	emit(ch, prometheus.CounterValue, "kafka_controller_controllerstats_uncleanleaderelections_total",
		"Unclean leader elections (a leader marked RECOVERING) in the records replayed since start.", float64(cs.UncleanLeaderElections))
	emit(ch, prometheus.CounterValue, "kafka_controller_controllerstats_electionfromeligibleleaderreplicas_total",
		"Leader elections from the eligible leader replicas in the records replayed since start.", float64(cs.ElectionsFromELR))
	for name, level := range cs.Features {
		gauge(ch, "kafka_server_metadataloader_finalizedlevel", "The finalized level of a feature.", float64(level), "featureName", featureTag(name))
	}
	// kraft.version is finalized in the log's control records, not among
	// the image's features.
	if _, ok := cs.Features[controller.KRaftVersionFeature]; !ok {
		gauge(ch, "kafka_server_metadataloader_finalizedlevel", "The finalized level of a feature.", float64(st.KRaftVersion),
			"featureName", featureTag(controller.KRaftVersionFeature))
	}
	gauge(ch, "kafka_server_metadataloader_currentmetadataversion", "The finalized metadata.version level.", float64(cs.MetadataVersion))
	gauge(ch, "kafka_server_metadataloader_handleloadsnapshotcount", "Snapshots the metadata image was loaded from.", float64(m.snapshotsLoaded.Load()))
	gauge(ch, "kafka_server_snapshotemitter_latestsnapshotgeneratedbytes", "Size of the last snapshot this node wrote; 0 before any.", float64(m.snapshotBytes.Load()))
	gauge(ch, "kafka_server_snapshotemitter_latestsnapshotgeneratedagems", "Ms since this node last wrote a snapshot (since it started, before any).",
		float64(max(now.UnixMilli()-m.snapshotAtMs.Load(), 0)))
	gauge(ch, "kafka_server_metadataloader_currentcontrollerid", "The id of the active controller, -1 when none is known.", float64(st.LeaderID))
}

// featureTag is a feature's name as Apache's FinalizedLevel tags it: the
// dots dropped and each word after the first capitalized
// (metadata.version: metadataVersion), like its other Yammer tags.
func featureTag(name string) string {
	words := strings.Split(name, ".")
	for i := 1; i < len(words); i++ {
		if w := words[i]; w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, "")
}

func (c *collector) collectChannel(ch chan<- prometheus.Metric) {
	var total peer.Traffic
	for id, t := range c.src.PeerTraffic() {
		peer := strconv.Itoa(int(id))
		emit(ch, prometheus.CounterValue, "kraftd_peer_requests_total", "Requests the raft client sent to the peer.", float64(t.Requests), "peer", peer)
		emit(ch, prometheus.CounterValue, "kraftd_peer_responses_total", "Responses the raft client read from the peer.", float64(t.Responses), "peer", peer)
		emit(ch, prometheus.CounterValue, "kraftd_peer_sent_bytes_total", "Bytes the raft client wrote to the peer.", float64(t.BytesOut), "peer", peer)
		emit(ch, prometheus.CounterValue, "kraftd_peer_received_bytes_total", "Bytes the raft client read from the peer.", float64(t.BytesIn), "peer", peer)
		total.Requests += t.Requests
		total.Responses += t.Responses
		total.BytesOut += t.BytesOut
		total.BytesIn += t.BytesIn
	}
	const p = "kafka_server_raftchannelmetrics_"
	emit(ch, prometheus.CounterValue, p+"request_total", "Requests the raft client sent, all peers.", float64(total.Requests))
	emit(ch, prometheus.CounterValue, p+"response_total", "Responses the raft client read, all peers.", float64(total.Responses))
	emit(ch, prometheus.CounterValue, p+"outgoing_byte_total", "Bytes the raft client wrote, all peers.", float64(total.BytesOut))
	emit(ch, prometheus.CounterValue, p+"incoming_byte_total", "Bytes the raft client read, all peers.", float64(total.BytesIn))
}
