package compat

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/storage/batch"
)

// Kinds of controller in a mixed quorum.
const (
	KindKraftd = "kraftd"
	KindApache = "apache"
)

// MixedReleaseVersion is the metadata.version every member of a mixed quorum
// is formatted with unless MixedOptions says otherwise: the newest level
// Apache 4.1 serves (4.1-IV1). A quorum runs at a level all its members
// support, so the full scenario set, which runs against 4.1.2 and 4.4.0,
// formats both at 4.1-IV1 (TestReleaseLineSmoke runs each line at its own
// default).
const MixedReleaseVersion = "4.1-IV1"

// MixedMember is one controller of a quorum that mixes kraftd and Apache
// Kafka nodes. Exactly one of Apache and kraftd fields is in use, by Kind.
type MixedMember struct {
	ID   int32
	Kind string
	Port int
	Dir  string // metadata.log.dir

	Apache *ApacheNode // Kind == KindApache
	conf   string      // kraftd's properties file
	proc   *Process    // kraftd's process
	race   bool        // kraftd runs the race-detector build
	// release is the --release-version Format and Reformat pass (empty:
	// MixedReleaseVersion).
	release string
	// cgroup is the cgroup v2 directory kraftd starts in ("": the test's);
	// an Apache member's is its ApacheNode's.
	cgroup string
	t      testing.TB
}

// Addr is the member's CONTROLLER listener.
func (m *MixedMember) Addr() string { return Addr(m.Port) }

// Proc is the member's current process (nil before the first Start).
func (m *MixedMember) Proc() *Process {
	if m.Apache != nil {
		return m.Apache.Proc
	}
	return m.proc
}

// LogDir is the member's __cluster_metadata-0 directory.
func (m *MixedMember) LogDir() string { return filepath.Join(m.Dir, "__cluster_metadata-0") }

// ConfigFile is the path of the member's server.properties.
func (m *MixedMember) ConfigFile() string {
	if m.Apache != nil {
		return m.Apache.Config
	}
	return m.conf
}

func (m *MixedMember) String() string { return fmt.Sprintf("%s node %d", m.Kind, m.ID) }

// Start launches (or relaunches, on the same directory) the member.
func (m *MixedMember) Start(t testing.TB) {
	t.Helper()
	if m.Apache != nil {
		m.Apache.Start(t)
		return
	}
	if m.proc == nil {
		bin := KraftdBinary(t)
		if m.race {
			bin = KraftdRaceBinary(t)
		}
		m.proc = NewProcess(t, fmt.Sprintf("kraftd-node%d", m.ID), bin,
			"--log-format", "json", "--log-level", "debug", "start", "--config", m.conf)
		m.proc.Cgroup = m.cgroup
	}
	m.proc.Start()
}

// Kill sends SIGKILL and waits until the process is gone.
func (m *MixedMember) Kill() {
	if p := m.Proc(); p != nil {
		p.Kill()
	}
}

// MixedOptions describe a mixed static quorum.
type MixedOptions struct {
	Version string // the Apache Kafka version of the Apache members
	// Kinds lists the members in node-id order (node ids 1, 2, ...).
	Kinds []string
	// Props are extra server.properties entries for every member.
	Props map[string]string
	// ApacheProps are extra entries for the Apache members only.
	ApacheProps map[string]string
	// KraftdProps are extra entries for the kraftd members only.
	KraftdProps map[string]string
	// KraftdRace runs the kraftd members from the race-detector build.
	KraftdRace bool
	// ApacheJVM is how the Apache members' JVMs run: the zero JVM is the
	// quick-start profile; a benchmark timing Apache sets ProductionProfile.
	ApacheJVM JVM
	// FormatArgs are extra arguments of every member's format command
	// (kafka-storage format and kraftd format take the same), e.g.
	// --add-scram values.
	FormatArgs []string
	// Prepare, if set, is called for each member once its directory's path
	// is known and before it is formatted (NewNemesisQuorum puts the
	// directory on a file system of its own and the member in a cgroup).
	Prepare func(testing.TB, *MixedMember)
	// ReleaseVersion is the metadata.version every member is formatted
	// with: MixedReleaseVersion when empty, or ApacheDefaultRelease for the
	// level Apache's storage tool of Version picks by itself (no
	// --release-version; kraftd is formatted at that release's newest
	// level, which is Apache's default).
	ReleaseVersion string
}

// ApacheDefaultRelease asks NewMixedStaticQuorum to format at the default
// metadata.version of the Apache release (4.4.0: 4.4-IV2).
const ApacheDefaultRelease = "apache-default"

// ReleaseLine is the release line ("4.4") of an Apache version ("4.4.0"),
// which kraftd format --release-version takes as that line's newest level.
func ReleaseLine(version string) string {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return version
	}
	return parts[0] + "." + parts[1]
}

// formatArgs are the --release-version arguments of each tool for opts.
func (o MixedOptions) formatArgs() (apache, kraftd []string) {
	switch o.ReleaseVersion {
	case "":
		return []string{"--release-version", MixedReleaseVersion}, []string{"--release-version", MixedReleaseVersion}
	case ApacheDefaultRelease:
		return nil, []string{"--release-version", ReleaseLine(o.Version)}
	}
	return []string{"--release-version", o.ReleaseVersion}, []string{"--release-version", o.ReleaseVersion}
}

// MixedVoters is the controller.quorum.voters value of the members.
func MixedVoters(members []*MixedMember) string {
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = fmt.Sprintf("%d@%s", m.ID, m.Addr())
	}
	return strings.Join(out, ",")
}

// NewMixedStaticQuorum writes the configurations of a static quorum
// (controller.quorum.voters, kraft.version 0) whose members are kraftd or
// Apache controllers as opts.Kinds says, and formats each with its own tool
// (kafka-storage format, kraftd format) under one cluster id at
// opts.ReleaseVersion. Nothing is started.
func NewMixedStaticQuorum(t testing.TB, opts MixedOptions) ([]*MixedMember, string) {
	t.Helper()
	ports := FreePorts(t, len(opts.Kinds))
	voters := make([]string, len(ports))
	for i, p := range ports {
		voters[i] = fmt.Sprintf("%d@%s", i+1, Addr(p))
	}
	clusterID := NewUUID()
	apacheFormat, kraftdFormat := opts.formatArgs()
	members := make([]*MixedMember, len(opts.Kinds))
	for i, kind := range opts.Kinds {
		m := &MixedMember{ID: int32(i + 1), Kind: kind, Port: ports[i], t: t, race: opts.KraftdRace}
		props := map[string]string{"controller.quorum.voters": strings.Join(voters, ",")}
		for k, v := range opts.Props {
			props[k] = v
		}
		switch kind {
		case KindApache:
			for k, v := range opts.ApacheProps {
				props[k] = v
			}
			m.Apache = NewApacheController(t, ApacheOptions{Version: opts.Version, NodeID: i + 1, Port: ports[i], Voters: props["controller.quorum.voters"], Props: props})
			m.Apache.JVM = opts.ApacheJVM
			m.Dir = m.Apache.Dir
			if opts.Prepare != nil {
				opts.Prepare(t, m)
			}
			m.Apache.Format(t, clusterID, append(apacheFormat, opts.FormatArgs...)...)
		case KindKraftd:
			m.Dir = filepath.Join(t.TempDir(), "metadata")
			extra := maps.Clone(props)
			maps.Copy(extra, opts.KraftdProps)
			m.conf = WriteKraftdConfig(t, m.ID, m.Addr(), m.Dir, extra)
			if opts.Prepare != nil {
				opts.Prepare(t, m)
			}
			KraftdFormat(t, m.ID, m.conf, clusterID, append(kraftdFormat, opts.FormatArgs...)...)
		default:
			t.Fatalf("compat: unknown member kind %q", kind)
		}
		members[i] = m
	}
	return members, clusterID
}

// KraftdFormat runs `kraftd format --config conf --cluster-id id args...`.
func KraftdFormat(t testing.TB, id int32, conf, clusterID string, args ...string) string {
	t.Helper()
	p := NewProcess(t, fmt.Sprintf("kraftd-format-%d", id), append([]string{KraftdBinary(t), "format", "--config", conf, "--cluster-id", clusterID}, args...)...)
	p.Start()
	if err := p.Wait(time.Minute); err != nil {
		t.Fatalf("kraftd format node %d: %v\n%s", id, err, p.Output())
	}
	return p.Output()
}

// StartMixed starts every member and stops them all together at the end of
// the test (a quorum's last members wait for their peers when stopping).
func StartMixed(t testing.TB, members ...*MixedMember) {
	t.Helper()
	for _, m := range members {
		m.Start(t)
	}
	t.Cleanup(func() { StopMixed(members...) })
}

// StopMixed stops the members at once (SIGTERM, then SIGKILL).
func StopMixed(members ...*MixedMember) {
	ps := make([]*Process, 0, len(members))
	for _, m := range members {
		ps = append(ps, m.Proc())
	}
	StopAll(ps...)
}

// MixedAddrs returns the members' addresses.
func MixedAddrs(members ...*MixedMember) []string {
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = m.Addr()
	}
	return out
}

// MemberByID finds a member by node id, or nil.
func MemberByID(members []*MixedMember, id int32) *MixedMember {
	for _, m := range members {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// Without returns members minus the one given.
func Without(members []*MixedMember, drop *MixedMember) []*MixedMember {
	var out []*MixedMember
	for _, m := range members {
		if m != drop {
			out = append(out, m)
		}
	}
	return out
}

// WaitMixedLeader is WaitLeader over the members expected to be running:
// it fails at once if one of them has exited (an Apache controller stops
// its JVM on a fatal fault, so a crash must not look like a slow election).
func WaitMixedLeader(t testing.TB, up []*MixedMember, accept func(*QuorumStatus) error) *QuorumStatus {
	t.Helper()
	var got *QuorumStatus
	Eventually(t, ReadyTimeout, fmt.Sprintf("a leader among %v", up), nil, func() error {
		for _, m := range up {
			if exited, err := m.Proc().Exited(); exited {
				if m.endedOnRemovalFault() {
					t.Logf("%s ended itself on Apache's removal race (%q, docs/compatibility.md): restarting it, as its supervisor would", m, apacheRemovalFault)
					m.Start(t)
					return errorf("%s restarted", m)
				}
				failNow(t, "%s exited (%v) while a leader was awaited", m, err)
			}
		}
		var addrs []string
		for _, m := range up {
			addrs = append(addrs, m.Addr())
		}
		var err error
		got, err = leaderAmong(addrs, accept)
		return err
	})
	return got
}

// apacheRemovalFault is what an Apache leader logs as it ends itself when
// a BeginQuorumEpoch answer (its heartbeat, every half fetch timeout) from
// a voter it has just removed reaches it: Apache's own race, which any
// removal under an Apache leader can meet (docs/compatibility.md).
const apacheRemovalFault = "Unexpected acknowledgement from non-voter"

// endedOnRemovalFault reports whether m is an Apache controller whose
// current run met apacheRemovalFault.
func (m *MixedMember) endedOnRemovalFault() bool {
	if m.Apache == nil || m.Proc() == nil {
		return false
	}
	out := m.Proc().Output()
	if i := strings.LastIndex(out, "=== start "); i > 0 {
		out = out[i:] // the current run's
	}
	return strings.Contains(out, apacheRemovalFault)
}

// ReplicaState finds a replica's row in a DescribeQuorum answer.
func ReplicaState(s *QuorumStatus, id int32) (kmsg.DescribeQuorumResponseTopicPartitionReplicaState, bool) {
	p := s.Resp.Topics[0].Partitions[0]
	for _, r := range append(p.CurrentVoters, p.Observers...) {
		if r.ReplicaID == id {
			return r, true
		}
	}
	return kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}, false
}

// VotersCaughtUp is a WaitLeader acceptor: every voter's log end offset has
// reached offset (and the leader knows its high watermark).
func VotersCaughtUp(offset int64) func(*QuorumStatus) error {
	return func(s *QuorumStatus) error {
		if s.HighWatermark < 0 {
			return errorf("leader %d: high watermark unknown", s.LeaderID)
		}
		for _, v := range s.Resp.Topics[0].Partitions[0].CurrentVoters {
			if v.LogEndOffset < offset {
				return errorf("leader %d epoch %d: voter %d at %d, want >= %d", s.LeaderID, s.LeaderEpoch, v.ReplicaID, v.LogEndOffset, offset)
			}
		}
		return nil
	}
}

// SegmentFiles lists a log directory's segment files in offset order.
func SegmentFiles(t testing.TB, logDir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(logDir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(segs)
	return segs
}

// BatchesBelow returns, byte for byte, the record batches of a log
// directory's segments whose last offset is below offset, and the offset
// the first of them starts at (-1 when none).
func BatchesBelow(t testing.TB, logDir string, offset int64) ([]byte, int64) {
	t.Helper()
	var out []byte
	first := int64(-1)
	for _, seg := range SegmentFiles(t, logDir) {
		raw, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = batch.Walk(raw, func(h batch.Header, b []byte) error {
			if h.LastOffset() < offset {
				if first < 0 {
					first = h.BaseOffset
				}
				out = append(out, b...)
			}
			return nil
		})
		if err != nil && !errors.Is(err, batch.ErrShort) {
			t.Fatalf("%s: %v", seg, err)
		}
	}
	return out, first
}

// KraftdDumpLog runs `kraftd dump-log` on files and returns its output.
func KraftdDumpLog(t testing.TB, files ...string) string {
	t.Helper()
	p := NewProcess(t, "kraftd-dump-log", append([]string{KraftdBinary(t), "dump-log"}, files...)...)
	p.Start()
	if err := p.Wait(time.Minute); err != nil {
		t.Fatalf("kraftd dump-log %v: %v\n%s", files, err, p.Output())
	}
	return p.Output()
}

// DumpLogMain is kafka-dump-log's main class in an Apache version: it was
// kafka.tools.DumpLogSegments (Scala, in the core jar) from 3.9 to 4.2 and
// moved to org.apache.kafka.tools.DumpLogSegments in kafka-tools in 4.3
// (4.2.2's jars hold only the former, 4.3.2's only the latter).
func DumpLogMain(version string) string {
	switch ReleaseLine(version) {
	case "3.9", "4.0", "4.1", "4.2":
		return "kafka.tools.DumpLogSegments"
	}
	return MainDumpLog
}

// ApacheDumpLog runs Apache's kafka-dump-log with the cluster metadata
// decoder on files and returns its stdout, failing the test if it fails.
func ApacheDumpLog(t testing.TB, version string, files ...string) string {
	t.Helper()
	stdout, stderr, err := RunTool(t, version, DumpLogMain(version), "--cluster-metadata-decoder", "--files", strings.Join(files, ","))
	if err != nil {
		t.Fatalf("kafka-dump-log %s on %v: %v\nstderr:\n%s", version, files, err, stderr)
	}
	return stdout
}

// SnapshotFiles lists a log directory's frozen snapshots, oldest first,
// leaving out the bootstrap snapshot 0-0.
func SnapshotFiles(t testing.TB, logDir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(logDir, "*.checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if filepath.Base(f) != "00000000000000000000-0000000000.checkpoint" {
			out = append(out, f)
		}
	}
	return out
}

// FirstSegmentBase is the base offset of a log directory's first segment
// (-1 without segments).
func FirstSegmentBase(t testing.TB, logDir string) int64 {
	t.Helper()
	segs := SegmentFiles(t, logDir)
	if len(segs) == 0 {
		return -1
	}
	var base int64
	fmt.Sscanf(filepath.Base(segs[0]), "%d.log", &base)
	return base
}

// LogEnd is the offset after the last whole batch of a log directory.
func LogEnd(t testing.TB, logDir string) int64 {
	t.Helper()
	segs := SegmentFiles(t, logDir)
	if len(segs) == 0 {
		return 0
	}
	end := FirstSegmentBase(t, logDir)
	raw, _ := BatchesBelow(t, logDir, 1<<62)
	_, _ = batch.Walk(raw, func(h batch.Header, _ []byte) error {
		end = h.NextOffset()
		return nil
	})
	return end
}

// NewMixedDynamicMember writes the configuration of one controller of a
// dynamic quorum (controller.quorum.bootstrap.servers, kraft.version 1) and
// formats it with its own tool and formatArgs ("--standalone",
// "--no-initial-controllers", ...) at MixedReleaseVersion.
func NewMixedDynamicMember(t testing.TB, version, kind string, id int32, port int, bootstrap, clusterID string, formatArgs ...string) *MixedMember {
	t.Helper()
	return NewMixedDynamicMemberWith(t, version, kind, id, port, bootstrap, clusterID, nil, formatArgs...)
}

// NewMixedDynamicMemberWith is NewMixedDynamicMember with extra
// server.properties entries (e.g. controller.quorum.auto.join.enable).
func NewMixedDynamicMemberWith(t testing.TB, version, kind string, id int32, port int, bootstrap, clusterID string, props map[string]string, formatArgs ...string) *MixedMember {
	t.Helper()
	return newMixedDynamicMember(t, version, MixedReleaseVersion, kind, id, port, bootstrap, clusterID, props, formatArgs...)
}

// NewLineDynamicMember is NewMixedDynamicMember formatted at the default
// metadata.version of version's release line (ReleaseLine: both tools take
// "4.2" as 4.2's newest level, which is also Apache 4.2's default) instead
// of MixedReleaseVersion, which an Apache 4.0 cannot format.
func NewLineDynamicMember(t testing.TB, version, kind string, id int32, port int, bootstrap, clusterID string, formatArgs ...string) *MixedMember {
	t.Helper()
	return newMixedDynamicMember(t, version, ReleaseLine(version), kind, id, port, bootstrap, clusterID, nil, formatArgs...)
}

func newMixedDynamicMember(t testing.TB, version, release, kind string, id int32, port int, bootstrap, clusterID string, props map[string]string, formatArgs ...string) *MixedMember {
	t.Helper()
	m := &MixedMember{ID: id, Kind: kind, Port: port, release: release, t: t}
	switch kind {
	case KindApache:
		m.Apache = NewApacheController(t, ApacheOptions{Version: version, NodeID: int(id), Port: port, Bootstrap: bootstrap, Props: props})
		m.Dir = m.Apache.Dir
	case KindKraftd:
		m.Dir = filepath.Join(t.TempDir(), "metadata")
		extra := map[string]string{"controller.quorum.bootstrap.servers": bootstrap}
		maps.Copy(extra, props)
		m.conf = WriteKraftdConfig(t, id, m.Addr(), m.Dir, extra)
	default:
		t.Fatalf("compat: unknown member kind %q", kind)
	}
	m.Format(t, clusterID, formatArgs...)
	return m
}

// Format formats the member's directory with its own tool at its release
// (MixedReleaseVersion unless made by NewLineDynamicMember) and args. Reformat is Format after the directory is
// wiped (a new directory id), with the member stopped.
func (m *MixedMember) Format(t testing.TB, clusterID string, args ...string) {
	t.Helper()
	release := m.release
	if release == "" {
		release = MixedReleaseVersion
	}
	args = append([]string{"--release-version", release}, args...)
	if m.Apache != nil {
		m.Apache.Format(t, clusterID, args...)
		return
	}
	KraftdFormat(t, m.ID, m.conf, clusterID, args...)
}

// Reformat kills the member, wipes its directory and formats it anew: the
// same node id with a new directory id. It is not restarted.
func (m *MixedMember) Reformat(t testing.TB, clusterID string, args ...string) {
	t.Helper()
	m.Kill()
	if err := os.RemoveAll(m.Dir); err != nil {
		t.Fatal(err)
	}
	m.Format(t, clusterID, args...)
}

// Config is the member's server.properties path (what add-controller takes
// as --command-config).
func (m *MixedMember) Config() string {
	if m.Apache != nil {
		return m.Apache.Config
	}
	return m.conf
}

// DirectoryID is directory.id from the member's meta.properties.
func (m *MixedMember) DirectoryID(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.Dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	return ParseProperties(b)["directory.id"]
}
