package compat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/internal/apachekafka"
	"github.com/kraftd/kraftd/internal/supervisor"
)

// Main classes of the Apache Kafka programs the harness runs.
const (
	MainKafka          = apachekafka.MainKafka                          // broker / controller
	MainStorageTool    = apachekafka.MainStorageTool                    // kafka-storage.sh
	MainMetadataQuorum = "org.apache.kafka.tools.MetadataQuorumCommand" // kafka-metadata-quorum.sh
	MainFeatures       = "org.apache.kafka.tools.FeatureCommand"        // kafka-features.sh
	MainMetadataShell  = "org.apache.kafka.shell.MetadataShell"         // kafka-metadata-shell.sh (not fetched for 4.4.0)
	MainDumpLog        = "org.apache.kafka.tools.DumpLogSegments"       // kafka-dump-log.sh
)

// ToolTimeout bounds one run of an Apache Kafka tool: a guard against a
// hung tool, not an expectation of speed (a tool JVM took over two minutes
// to format a broker at a load average of 45 on the 2-core VM).
const ToolTimeout = 5 * time.Minute

// JVM says how the harness runs an Apache Kafka JVM, through the launcher
// the kit package uses too (package internal/apachekafka). The zero JVM,
// which every test uses, is QuickStartProfile with a 512 MiB heap for a
// server and 256 MiB for a tool. The benchmarks that compare Apache's
// speed with kraftd's run Apache's servers with ProductionProfile.
type JVM = apachekafka.JVM

// The JVM profiles: see package internal/apachekafka.
const (
	// QuickStartProfile: the serial collector and the client compiler
	// only; quick to start and light on a 2-core machine.
	QuickStartProfile = apachekafka.QuickStart
	// ProductionProfile: G1 and the full JIT, as Apache's scripts run a
	// server.
	ProductionProfile = apachekafka.Production
)

// ApacheOptions describe one Apache Kafka controller node.
type ApacheOptions struct {
	Version string // e.g. "4.1.2"; one of Versions
	NodeID  int
	Port    int // CONTROLLER listener on 127.0.0.1; 0 picks a free port
	// Voters sets controller.quorum.voters ("1@127.0.0.1:9093,..."), a
	// static quorum. Leave it empty for a dynamic quorum and set Bootstrap.
	Voters string
	// Bootstrap sets controller.quorum.bootstrap.servers ("127.0.0.1:9093,...").
	// Empty with empty Voters means this node's own address.
	Bootstrap string
	// Props are extra or overriding server.properties entries.
	Props map[string]string
}

// ApacheNode is an Apache Kafka controller with its configuration and
// directory in the test's temporary directory.
type ApacheNode struct {
	Version string
	NodeID  int
	Port    int
	Dir     string            // log.dirs and metadata.log.dir
	Config  string            // path of the server.properties written
	Props   map[string]string // what Config holds
	Proc    *Process          // nil until Start
	// JVM is how its JVM runs (the zero JVM: quick-start, 512 MiB), read by
	// the first Start.
	JVM JVM
	// Cgroup is the cgroup v2 directory its JVM starts in ("": the test's),
	// read by the first Start (a nemesis.Net cuts it by its cgroup).
	Cgroup string
	t      testing.TB
}

// NewApacheController writes the configuration of an Apache controller:
// process.roles=controller, node.id, CONTROLLER on 127.0.0.1, the quorum
// (static voters or bootstrap servers) and its directory. It does not format
// or start it.
func NewApacheController(t testing.TB, o ApacheOptions) *ApacheNode {
	t.Helper()
	KafkaCache(t, o.Version)
	if o.Port == 0 {
		o.Port = FreePorts(t, 1)[0]
	}
	base := t.TempDir()
	n := &ApacheNode{Version: o.Version, NodeID: o.NodeID, Port: o.Port,
		Dir: filepath.Join(base, "metadata"), Config: filepath.Join(base, "server.properties"), t: t}
	n.Props = map[string]string{
		"process.roles":                         "controller",
		"node.id":                               fmt.Sprint(o.NodeID),
		"controller.listener.names":             "CONTROLLER",
		"listeners":                             "CONTROLLER://" + Addr(o.Port),
		"listener.security.protocol.map":        "CONTROLLER:PLAINTEXT",
		"log.dirs":                              n.Dir,
		"metadata.log.dir":                      n.Dir,
		"controller.quorum.election.timeout.ms": "1000",
	}
	switch {
	case o.Voters != "":
		n.Props["controller.quorum.voters"] = o.Voters
	case o.Bootstrap != "":
		n.Props["controller.quorum.bootstrap.servers"] = o.Bootstrap
	default:
		n.Props["controller.quorum.bootstrap.servers"] = Addr(o.Port)
	}
	for k, v := range o.Props {
		n.Props[k] = v
	}
	writeFile(t, n.Config, []byte(FormatProperties(n.Props)))
	return n
}

// FormatProperties renders Java properties, one key=value a line, sorted.
// Values here never need escaping (no backslashes or newlines).
func FormatProperties(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return b.String()
}

// Addr is the node's CONTROLLER listener address.
func (n *ApacheNode) Addr() string { return Addr(n.Port) }

// LogDir is the node's __cluster_metadata-0 directory.
func (n *ApacheNode) LogDir() string { return filepath.Join(n.Dir, "__cluster_metadata-0") }

// Format runs Apache's storage tool: `format -c <config> -t <clusterID>`
// followed by args: "--standalone", "--no-initial-controllers",
// "--initial-controllers", "1@127.0.0.1:9093:<dirid>,...", "--release-version",
// ..., or nothing for a static quorum. It fails the test if the tool fails
// and returns its output.
func (n *ApacheNode) Format(t testing.TB, clusterID string, args ...string) string {
	t.Helper()
	argv := append([]string{"format", "-c", n.Config, "-t", clusterID}, args...)
	stdout, stderr, err := RunTool(t, n.Version, MainStorageTool, argv...)
	if err != nil {
		t.Fatalf("format node %d (Apache %s) %q: %v\nstdout:\n%s\nstderr:\n%s", n.NodeID, n.Version, args, err, stdout, stderr)
	}
	return stdout
}

// MetaProperties reads meta.properties of the node's metadata directory.
func (n *ApacheNode) MetaProperties(t testing.TB) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.Dir, "meta.properties"))
	if err != nil {
		t.Fatalf("compat: %v", err)
	}
	return ParseProperties(b)
}

// ParseProperties reads simple Java properties (key=value lines, # comments).
func ParseProperties(b []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// Start launches the node (kafka.Kafka in a JVM as n.JVM says) as a
// Process stopped at the end of the test. Start it again after Kill or
// Stop to restart it on the same directory.
func (n *ApacheNode) Start(t testing.TB) {
	t.Helper()
	if n.Proc == nil {
		name := fmt.Sprintf("apache-%s-node%d", n.Version, n.NodeID)
		n.Proc = NewProcess(t, name, ApacheArgv(t, n.Version, MainKafka, n.JVM, n.Config)...)
		n.Proc.Cgroup = n.Cgroup
	}
	n.Proc.Start()
}

// WaitReady polls ApiVersions on the node until it answers, failing the test
// if the process exits or ReadyTimeout passes.
func (n *ApacheNode) WaitReady(t testing.TB) {
	t.Helper()
	WaitAPIVersions(t, n.Addr(), n.Proc)
}

// ApacheArgv is the command line of a JVM running an Apache Kafka main
// class of a fetched version with args, or fails the test.
func ApacheArgv(t testing.TB, version, mainClass string, jvm JVM, args ...string) []string {
	t.Helper()
	argv, err := jvm.Argv(KafkaCache(t, version), mainClass, args...)
	if err != nil {
		t.Fatalf("compat: %v", err)
	}
	return argv
}

// RunTool runs an Apache Kafka main class to completion (a quick-start
// JVM, 256 MiB heap) and returns its stdout and stderr: tools log to
// stderr, so stdout is only their output. A run longer than ToolTimeout is
// killed by PID. err is the exit error.
func RunTool(t testing.TB, version, mainClass string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	argv := ApacheArgv(t, version, mainClass, JVM{}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), ToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.WaitDelay = 5 * time.Second
	err = supervisor.Run(cmd)
	if ctx.Err() != nil {
		err = errorf("%s %s: killed after %v: %v", mainClass, version, ToolTimeout, err)
	}
	return o.String(), e.String(), err
}

// MetadataQuorum runs kafka-metadata-quorum (MetadataQuorumCommand), e.g.
// MetadataQuorum(t, "4.1.2", "--bootstrap-controller", addr, "describe", "--status").
// It returns stdout; on failure the error carries stderr's tail.
func MetadataQuorum(t testing.TB, version string, args ...string) (string, error) {
	t.Helper()
	return toolOutput(t, version, MainMetadataQuorum, args...)
}

// Features runs kafka-features (FeatureCommand), e.g.
// Features(t, v, "--bootstrap-controller", addr, "describe").
func Features(t testing.TB, version string, args ...string) (string, error) {
	t.Helper()
	return toolOutput(t, version, MainFeatures, args...)
}

func toolOutput(t testing.TB, version, mainClass string, args ...string) (string, error) {
	t.Helper()
	stdout, stderr, err := RunTool(t, version, mainClass, args...)
	if err != nil {
		if len(stderr) > 4000 {
			stderr = "..." + stderr[len(stderr)-4000:]
		}
		return stdout, errorf("%s %q: %v\nstderr:\n%s", mainClass, args, err, stderr)
	}
	return stdout, nil
}

// NewApacheStaticQuorum writes the configurations of count Apache controllers
// (node ids 1..count) sharing a static controller.quorum.voters on free
// 127.0.0.1 ports, formats them with one new cluster id (no quorum flag, so
// kraft.version 0), and returns them unstarted with the cluster id.
func NewApacheStaticQuorum(t testing.TB, version string, count int) ([]*ApacheNode, string) {
	t.Helper()
	return NewApacheStaticQuorumWith(t, version, count, nil)
}

// NewApacheStaticQuorumWith is NewApacheStaticQuorum with extra or
// overriding server.properties entries on every node.
func NewApacheStaticQuorumWith(t testing.TB, version string, count int, props map[string]string) ([]*ApacheNode, string) {
	t.Helper()
	ports := FreePorts(t, count)
	voters := make([]string, count)
	for i, p := range ports {
		voters[i] = fmt.Sprintf("%d@%s", i+1, Addr(p))
	}
	clusterID := NewUUID()
	nodes := make([]*ApacheNode, count)
	for i, p := range ports {
		nodes[i] = NewApacheController(t, ApacheOptions{Version: version, NodeID: i + 1, Port: p, Voters: strings.Join(voters, ","), Props: props})
		nodes[i].Format(t, clusterID)
	}
	return nodes, clusterID
}

// StartApache starts every node, and registers a cleanup that stops them all
// at once (it runs before each node's own cleanup).
func StartApache(t testing.TB, nodes ...*ApacheNode) {
	t.Helper()
	for _, n := range nodes {
		n.Start(t)
	}
	t.Cleanup(func() {
		ps := make([]*Process, len(nodes))
		for i, n := range nodes {
			ps[i] = n.Proc
		}
		StopAll(ps...)
	})
}

// Addrs returns the nodes' CONTROLLER addresses.
func Addrs[T interface{ Addr() string }](nodes ...T) []string {
	a := make([]string, len(nodes))
	for i, n := range nodes {
		a[i] = n.Addr()
	}
	return a
}

// without returns nodes but the one given, in order.
func without[T comparable](nodes []T, drop T) []T {
	return slices.DeleteFunc(slices.Clone(nodes), func(n T) bool { return n == drop })
}
