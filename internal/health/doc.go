// Package health asks every controller of a KRaft quorum, each one itself,
// what it knows, and diagnoses the quorum from the answers: it is what
// `kraftd status` runs, and it must work when the quorum has no leader,
// when most controllers are gone, and against Apache Kafka controllers.
//
// It owns the probes (probe.go), the assembly of one Report from them and
// from the leader's DescribeQuorum (report.go), what kraftd metrics
// listeners add (metrics.go: the brokers, each node's own role name and
// leader contact age), the diagnosis and its exit code (diagnose.go), and
// the report's text form (text.go). Parsing flags and files is the
// command's.
//
// It never changes a controller's state: it sends only ApiVersions,
// DescribeCluster, DescribeQuorum, and a Fetch that every controller,
// kraftd's or Apache's, refuses before it reads its log or records the
// fetcher (its leader epoch is 0, below any elected epoch). The refusal
// carries the controller's own epoch and the leader it knows
// (FetchResponse.CurrentLeader), which is how a controller that is not the
// leader tells its view: both kraftd and Apache answer DescribeQuorum at a
// non-leader with NOT_LEADER_OR_FOLLOWER and no leader or epoch.
//
// What the wire cannot tell is left unknown rather than guessed: a
// controller without a leader reads "no-leader" (a candidate, a
// prospective and an unattached controller answer alike), a non-leader's
// log end offset is known only from the leader's DescribeQuorum, and the
// software's name and release are not in any answer: the newest
// metadata.version a controller supports (ApiVersions) stands for its
// release.
package health
