package kit

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kraftd/kraftd/internal/apachekafka"
	"github.com/kraftd/kraftd/internal/supervisor"
)

// stopTimeout is how long a graceful stop waits after SIGTERM before it
// sends SIGQUIT (stacks or a thread dump into the node's log) and then
// SIGKILL: an Apache broker's controlled shutdown takes a few seconds.
const stopTimeout = 30 * time.Second

// Node is one process of a cluster: a kraftd or Apache controller, or an
// Apache broker. Its methods are safe to call from several goroutines.
type Node struct {
	ID   int32
	Role Role
	Port int    // its one listener, on 127.0.0.1
	Dir  string // its configuration, data and log
	proc *supervisor.Process
}

// Addr is the node's listener address: a broker's PLAINTEXT (or SSL) listener (a
// client's bootstrap server) or a controller's CONTROLLER listener.
func (n *Node) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// Log is the path of the file holding the node's stdout and stderr, across
// restarts.
func (n *Node) Log() string { return n.proc.Log }

// PID is the node's process id while it runs, else 0.
func (n *Node) PID() int { return n.proc.PID() }

// Running reports whether the node's process is running (a paused one is).
func (n *Node) Running() bool { return n.proc.Running() }

// Kill sends SIGKILL, as a crash would, and returns once the process is gone.
func (n *Node) Kill() { n.proc.Kill() }

// Stop shuts the node down gracefully (SIGTERM: a broker's controlled
// shutdown, a kraftd leader's resignation), with SIGQUIT (its stacks in its
// log) then SIGKILL after 30 seconds.
func (n *Node) Stop() { n.proc.Stop() }

// Start starts a stopped or killed node again on its data. It returns an
// error if the node is running.
func (n *Node) Start() error {
	if err := n.proc.Start(); err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	return nil
}

// Restart is Stop (graceful) then Start.
func (n *Node) Restart() error {
	n.Stop()
	return n.Start()
}

// Pause freezes the node with SIGSTOP, as a hung process or a long GC pause
// looks to its peers; Resume continues it with SIGCONT.
func (n *Node) Pause() error { return n.proc.Pause() }

// Resume continues a paused node.
func (n *Node) Resume() error { return n.proc.Resume() }

func (n *Node) isController() bool { return n.Role != RoleBroker }

// nodeConfig is the server.properties of node n in cluster c.
func (c *Cluster) nodeConfig(n *Node) map[string]string {
	// The security protocol of the CONTROLLER listener and the brokers'
	// one, whose name is its protocol's.
	protocol := c.brokerProtocol()
	props := map[string]string{
		"node.id":                        fmt.Sprint(n.ID),
		"controller.listener.names":      "CONTROLLER",
		"controller.quorum.voters":       c.ControllerQuorumVoters(),
		"listener.security.protocol.map": "CONTROLLER:" + protocol + "," + protocol + ":" + protocol,
	}
	if c.spec.TLS {
		maps.Copy(props, c.tlsProps())
	}
	maps.Copy(props, c.saslProps(n))
	data := filepath.Join(n.Dir, "data")
	if n.isController() {
		props["process.roles"] = "controller"
		props["listeners"] = "CONTROLLER://" + n.Addr()
		props["metadata.log.dir"] = data
		if n.Role == RoleApacheController {
			props["log.dirs"] = data
			props["listener.security.protocol.map"] = "CONTROLLER:" + protocol
		}
		maps.Copy(props, c.spec.ControllerConfig)
		return props
	}
	rf := fmt.Sprint(min(3, len(c.brokers)))
	maps.Copy(props, map[string]string{
		"process.roles":                            "broker",
		"listeners":                                protocol + "://" + n.Addr(),
		"advertised.listeners":                     protocol + "://" + n.Addr(),
		"inter.broker.listener.name":               protocol,
		"log.dirs":                                 data,
		"offsets.topic.replication.factor":         rf,
		"transaction.state.log.replication.factor": rf,
		"transaction.state.log.min.isr":            fmt.Sprint(min(2, len(c.brokers))),
		"default.replication.factor":               rf,
		"group.initial.rebalance.delay.ms":         "0",
	})
	maps.Copy(props, c.spec.BrokerConfig)
	return props
}

// prepare writes node n's configuration and, on its first run, formats its
// directory; then it builds the process that runs it.
func (c *Cluster) prepare(ctx context.Context, n *Node) error {
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	conf := filepath.Join(n.Dir, "server.properties")
	props := c.nodeConfig(n)
	if err := os.WriteFile(conf, []byte(formatProperties(props)), 0o644); err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	var format, run []string
	var err error
	line, _ := releaseLine(c.spec.Kafka)
	switch n.Role {
	case RoleKraftdController:
		format = append([]string{c.kraftd, "format", "--config", conf, "--cluster-id", c.layout.ClusterID, "--release-version", line}, c.scramFormatArgs()...)
		run = []string{c.kraftd, "--log-format", "console", "start", "--config", conf}
	case RoleApacheController:
		// The quick-start JVM (package apachekafka): test clusters start
		// several JVMs on machines of few cores and need no throughput.
		format, err = apachekafka.JVM{}.Argv(c.kafkaDir, apachekafka.MainStorageTool,
			append([]string{"format", "-c", conf, "-t", c.layout.ClusterID, "--release-version", line}, c.scramFormatArgs()...)...)
		if err == nil {
			run, err = apachekafka.JVM{}.Argv(c.kafkaDir, apachekafka.MainKafka, conf)
		}
	case RoleBroker:
		run, err = apachekafka.JVM{}.Argv(c.kafkaDir, apachekafka.MainKafka, conf)
	}
	if err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	name := fmt.Sprintf("%s-%d", n.Role, n.ID)
	n.proc = &supervisor.Process{Name: name, Argv: run, Log: filepath.Join(n.Dir, "out.log"), StopTimeout: stopTimeout}
	if n.Role == RoleBroker {
		return c.formatBroker(n, props["log.dirs"])
	}
	if fileExists(filepath.Join(n.Dir, "data", "meta.properties")) {
		return nil
	}
	f := &supervisor.Process{Name: name + "-format", Argv: format, Log: filepath.Join(n.Dir, "format.log")}
	if err := f.Start(); err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	select {
	case <-ctx.Done():
		f.Kill()
		return fmt.Errorf("kit: format node %d: %w", n.ID, ctx.Err())
	case <-f.Done():
	}
	if _, err := f.Exited(); err != nil {
		out, _ := os.ReadFile(f.Log)
		return fmt.Errorf("kit: format node %d (%s): %v\n%s", n.ID, n.Role, err, out)
	}
	return nil
}

// formatBroker writes meta.properties into each of a broker's log.dirs not
// formatted yet, as Apache's storage tool does for a broker: version 1,
// the node and cluster ids, and a new directory id per directory. That is
// all the tool writes for a broker (the bootstrap metadata is the
// controllers'), and it spares a JVM start of several seconds per broker.
func (c *Cluster) formatBroker(n *Node, logDirs string) error {
	for _, dir := range strings.Split(logDirs, ",") {
		meta := filepath.Join(strings.TrimSpace(dir), "meta.properties")
		if fileExists(meta) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(meta), 0o755); err != nil {
			return fmt.Errorf("kit: %w", err)
		}
		props := map[string]string{"version": "1", "node.id": fmt.Sprint(n.ID), "cluster.id": c.layout.ClusterID, "directory.id": newUUID()}
		if err := os.WriteFile(meta, []byte(formatProperties(props)), 0o644); err != nil {
			return fmt.Errorf("kit: %w", err)
		}
	}
	return nil
}

// formatProperties renders Java properties, one key=value a line, sorted.
// Values the kit writes never need escaping.
func formatProperties(props map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return b.String()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// newUUID returns a random Kafka Uuid in Kafka's text form (16 bytes,
// URL-safe base64 without padding), never one of the reserved ids (high
// 15 bytes zero) nor one starting with '-', which a command line would
// take for a flag.
func newUUID() string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand never fails on Linux
		}
		s := base64.RawURLEncoding.EncodeToString(b[:])
		if s[0] != '-' && slices.ContainsFunc(b[:15], func(c byte) bool { return c != 0 }) {
			return s
		}
	}
}
