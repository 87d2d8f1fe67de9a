// Package quorum is KRaft consensus (KIP-595, KIP-630, KIP-996, KIP-853,
// KIP-1166) as a pure, deterministic state machine in the style of
// etcd-io/raft.
//
// It must never start goroutines, open sockets or files, or read the clock:
// time arrives through Tick, randomness from a seeded source in Config, and
// every effect leaves through Ready for the caller to persist, send and apply.
//
// # Driving a Node
//
// The shell owns one Node and calls it from a single goroutine. In this
// repository that shell is package node, whose Ready loop (node/ready.go)
// production, the scenario transcripts and the simulator all run; in
// outline it does this:
//
//	n, _ := quorum.New(cfg) // cfg.HardState = quorum-state, cfg.Log = the log on disk
//	for {
//		select {
//		case <-ticker:            n.Tick(wallClockMs)
//		case m := <-inbound:      n.Step(m)      // requests, responses, failures
//		case recs := <-proposals: n.Propose(recs) // leader only; drain the whole queue
//		}
//		if n.HasReady() {
//			rd := n.Ready()
//			// 1. persist: HardState (quorum-state: tmp, fsync, rename), then
//			//    SnapshotWrite, Truncate, Append, and fsync when MustSync
//			// 2. send: rd.Messages (before step 1 instead, if rd.SendFirst)
//			// 3. apply: committed records up to rd.HighWatermark
//			n.Advance()
//		}
//	}
//
// Rules of the loop:
//
//   - Persist before send. A vote grant, a new epoch, a follower's appended
//     records: the messages that depend on them are in the same Ready and
//     must leave only after the writes are durable. The one exception is
//     marked SendFirst: a leader with nothing new in its HardState ships its
//     new records to waiting followers while it writes them itself (Raft
//     thesis 10.2.1), so the leader's fsync and the followers' overlap. The
//     shell may even run that fsync beside the loop: AdvanceWritten, then
//     LeaderSynced when it returns; followers that synced first commit the
//     records meanwhile.
//   - Do not call Step, Tick or Propose between Ready and Advance. After
//     Advance the Log must reflect every change of that Ready; the core reads
//     the log end, epochs and records through the Log interface.
//   - Group commit: Propose calls made between Advance and the next Ready
//     land in one batch (no linger timer). The leader counts its own records
//     toward the high watermark only after the Advance that follows their
//     fsync; Fetch is served from the Log and from records handed out in a
//     Ready and not yet durable.
//   - A SnapshotChunk with Position 0 starts a new download (discard any
//     partial one); after the chunk with Done the shell freezes the snapshot
//     and resets the log to start, empty, at its end offset.
//   - Truncate cuts at a batch boundary; Append holds whole batches that
//     continue the log.
//
// # Messages, ReqIDs and versions
//
// Message carries franz-go kmsg bodies. For an inbound request the shell
// picks Message.ReqID and the core copies it into its response (which is
// built at the request's version). The core's own requests get ReqIDs from
// the core; the shell steps the response back with the same ReqID, or a
// Message with Err set (ErrPeerGone, ErrUnreachable, ErrTimeout) if it
// could not be delivered. The core also times its requests out by itself
// after RequestTimeoutMs, so reporting failures only makes retries faster,
// and ErrPeerGone (the peer's host refused or closed the connection) only
// makes failover faster: a follower whose fetches to its leader fail so
// twice in a row, the second on a new connection, takes its leader's
// process for dead and pre-votes without waiting out the fetch timeout. Late
// and duplicate responses are dropped by ReqID, role and epoch.
//
// A leader adding a voter asks it for ApiVersions (the shell answers those,
// not the core); such a request carries Message.Endpoint, where the voter
// listens, since the shell knows only voters' addresses. So do requests to
// peers outside the voter set: Config.BootstrapServers, addressed as peers
// BootstrapID(0), BootstrapID(1), … (-2, -3, … as in Apache), which a
// node that knows no leader asks in place of the voters whenever they are
// configured; and a leader that the node's voter set does not name, at the
// endpoint a Fetch answer gave for it. A node formatted
// --no-initial-controllers starts with no voter set at all, an observer
// that finds the quorum through its bootstrap servers. A voting follower
// sends its leader UpdateRaftVoter when the voter set names it otherwise
// than it is (reconfig.go).
//
// Requests go out at the newest version the core speaks (Fetch 18, Vote 2,
// BeginQuorumEpoch 1, EndQuorumEpoch 1, FetchSnapshot 1), capped by
// Config.PeerVersions, which the shell fills from the peer's ApiVersions. A
// peer that cannot take Vote v2 cannot be asked for a pre-vote: as in
// Apache, the node then skips the pre-vote and starts a standard election.
// Brokers and observer controllers are handled like any fetcher: they are
// not voters, never count toward the high watermark, and are listed by
// DescribeQuorum as observers. A replica is a voter when the newest voter
// set names its id and, if the set knows one, its directory id; the same id
// fetching from another directory is an observer.
//
// # Roles
//
// Unattached (possibly voted), Prospective (pre-vote, nothing persisted),
// Candidate, Leader, Follower and Resigned, with per-role handling and
// becomeX transitions following Apache Kafka 4.1's KafkaRaftClient and
// QuorumState: randomized election timeout in [T, 2T); pre-vote before
// every election; a pre-vote moves no receiver, whatever its epoch (where
// Apache's moves to it); a follower that has fetched from a live leader
// refuses pre-votes, until it finds its leader's process gone or, with
// Config.SilenceTimeoutMs, silent (silence.go; an observer also once its
// fetch timeout passes: it may be a voter in a newer set); no epoch above math.MaxInt32-1 is taken from a peer,
// and no node stands past math.MaxInt32 (maxEpoch); a request moves a node at most two epochs (maxEpochStep: anyone can
// forge one, so it must cost no more epochs than an election), a standard Vote from outside the voter set none while the
// node has a live leader, and a leader notice naming a second leader of the node's epoch is refused (answers, from peers
// the node dialled, are not bounded: they are how it catches up); a rejected candidate waits out its timeout and pre-votes again;
// a leader resigns when a majority of voters has not fetched within 1.5
// fetch timeouts (check-quorum), when its own
// fsync stalls (silence.go), or on Resign, sending EndQuorumEpoch with
// successors ordered by fetch offset; followers apply Apache's position-based
// backoff; the leader resends BeginQuorumEpoch every fetch timeout / 2,
// starts each epoch with a LeaderChange control batch (plus KRaftVersion and
// Voters at kraft.version >= 1 when the log holds no VotersRecord yet or
// the set names the leader otherwise than it is: its directory id,
// listeners or kraft.version range), and, once a record of its epoch has
// committed (SoftState.EpochCommitted, the moment Apache hands leadership to
// its controller), writes Config.IdleRecord when the log has been idle for
// IdleIntervalMs. The high watermark is the largest offset
// a majority of voters hold, and moves only once it passes the leader's
// epoch start offset.
//
// # Reading the code
//
// As in etcd-io/raft, every input first meets the rules common to all
// roles, then the current role's own step. epoch.go holds the common
// rules: cluster id and partition checks, epoch comparison, leader
// discovery, and matching an answer to the role and epoch its request was
// sent in; bootstrap.go, whom a node that knows no leader asks, and where
// peers outside the voter set listen. roles.go holds the role table (each role's step, tick, poll and
// vote rule) and the becomeX transitions; the roles themselves are in
// step_leader.go, step_nominee.go (Prospective and Candidate),
// step_follower.go (voters and observers) and step_unattached.go
// (Unattached and Resigned). The leader's per-replica progress, high
// watermark and check-quorum live in progress.go; the node's requests in
// flight in requests.go; Fetch serving in fetch.go; snapshots in
// snapshot.go; DescribeQuorum in describe_quorum.go; the pending log end
// in log.go; the voter set, a state machine of the log's VotersRecord and
// KRaftVersionRecord (applied as appended, taken from installed snapshots,
// undone on truncation), in voters.go; voter changes in reconfig.go; the
// kraft.version upgrade in kraftversion.go; auto-join in autojoin.go; wire
// formats in wire.go and control.go.
package quorum
