package kit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kraftd/kraftd/internal/supervisor"
)

// Cluster is a running kit cluster. Stop it when done (StartT does that for
// a test); should the program die first, the kernel kills every process of
// it (each child is started with a parent-death signal).
type Cluster struct {
	spec        Spec
	dir         string
	temporary   bool // dir was made by Start and is removed by Stop
	kraftd      string
	kafkaDir    string
	layout      *Layout
	tls         *tls.Config // the clients' configuration when spec.TLS
	controllers []*Node
	brokers     []*Node

	stopOnce sync.Once
}

// Start starts the cluster spec describes and returns once a produce to it
// succeeds (see WaitReady), or with an error, having stopped whatever it
// had started. Apache Kafka jars missing from the cache are fetched first
// (FetchKafka), and kraftd is built if no binary is given.
func Start(ctx context.Context, spec Spec) (*Cluster, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{spec: spec, dir: spec.Dir}
	if c.kafkaDir, err = FetchKafka(ctx, spec.Kafka, spec.Logf); err != nil {
		return nil, err
	}
	if spec.KraftdControllers > 0 {
		if c.kraftd, err = kraftdBinary(ctx, spec); err != nil {
			return nil, err
		}
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "kraftd-kit-"); err != nil {
			return nil, fmt.Errorf("kit: %w", err)
		}
		c.temporary = true
	} else if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	if err := c.boot(ctx); err != nil {
		// The logs say why, and a temporary directory goes with Stop.
		var tails strings.Builder
		for _, n := range c.Nodes() {
			if n.proc != nil {
				fmt.Fprintf(&tails, "\n---- %s %d: last lines of %s ----\n%s", n.Role, n.ID, n.Log(), logTail(n.Log(), 2<<10))
			}
		}
		c.Stop()
		return nil, fmt.Errorf("%w%s", err, tails.String())
	}
	return c, nil
}

// boot lays the cluster out, formats new nodes, starts them all and waits
// until it takes produce requests.
func (c *Cluster) boot(ctx context.Context) error {
	layout, existing, err := loadOrNewLayout(c.dir, c.spec)
	if err != nil {
		return err
	}
	c.layout = layout
	if err := c.ensureCertificates(); err != nil {
		return err
	}
	for _, nl := range layout.Nodes {
		n := &Node{ID: nl.ID, Role: nl.Role, Port: nl.Port, Dir: filepath.Join(c.dir, fmt.Sprintf("node-%d", nl.ID))}
		if n.isController() {
			c.controllers = append(c.controllers, n)
		} else {
			c.brokers = append(c.brokers, n)
		}
	}
	if existing {
		c.spec.Logf("kit: starting the cluster %s kept in %s again", layout.ClusterID, c.dir)
	}
	// Formatting runs a JVM per Apache node (seconds each): all at once.
	start := time.Now()
	if err := eachNode(c.Nodes(), func(n *Node) error { return c.prepare(ctx, n) }); err != nil {
		return err
	}
	c.spec.Logf("kit: configured and formatted %d nodes in %v", len(c.Nodes()), time.Since(start).Round(time.Millisecond))
	start = time.Now()
	for _, n := range c.Nodes() {
		if err := n.Start(); err != nil {
			return err
		}
		c.spec.Logf("kit: started %s %d on %s (pid %d, log %s)", n.Role, n.ID, n.Addr(), n.PID(), n.Log())
	}
	if err := c.saveLayout(os.Getpid()); err != nil {
		return err
	}
	ready, cancel := context.WithTimeout(ctx, c.spec.ReadyTimeout)
	defer cancel()
	if err := c.WaitReady(ready); err != nil {
		return err
	}
	c.spec.Logf("kit: cluster %s ready (a produce succeeded) %v after its nodes started", c.layout.ClusterID, time.Since(start).Round(time.Millisecond))
	return nil
}

// eachNode runs fn for every node at once and returns the first error.
func eachNode(nodes []*Node, fn func(*Node) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(n)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// saveLayout records the layout and the nodes' PIDs in the state file.
func (c *Cluster) saveLayout(supervisor int) error {
	for i, nl := range c.layout.Nodes {
		c.layout.Nodes[i].PID = c.Node(nl.ID).PID()
	}
	c.layout.SupervisorPID = supervisor
	return writeLayout(c.dir, c.layout)
}

// Stop stops every node gracefully (brokers first, then the controllers;
// SIGKILL for any still running after 30 seconds), by PID, and removes the
// directory if Start made it. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		start := time.Now()
		supervisor.StopAll(procs(c.brokers)...)
		supervisor.StopAll(procs(c.controllers)...)
		c.spec.Logf("kit: stopped the cluster in %v", time.Since(start).Round(time.Millisecond))
		if c.temporary {
			os.RemoveAll(c.dir)
		} else if c.layout != nil {
			_ = c.saveLayout(0)
		}
	})
}

// procs are the nodes' processes: nodes that failed before theirs was
// made have none.
func procs(nodes []*Node) []*supervisor.Process {
	var ps []*supervisor.Process
	for _, n := range nodes {
		if n.proc != nil {
			ps = append(ps, n.proc)
		}
	}
	return ps
}

// ClusterID is the cluster's id, as meta.properties holds it.
func (c *Cluster) ClusterID() string { return c.layout.ClusterID }

// Dir is the directory holding the cluster's data and logs.
func (c *Cluster) Dir() string { return c.dir }

// Kafka is the Apache Kafka version the cluster runs.
func (c *Cluster) Kafka() string { return c.spec.Kafka }

// Brokers are the broker nodes, by node id.
func (c *Cluster) Brokers() []*Node { return c.brokers }

// Controllers are the controller nodes, by node id.
func (c *Cluster) Controllers() []*Node { return c.controllers }

// Nodes are the controllers then the brokers.
func (c *Cluster) Nodes() []*Node {
	return append(append([]*Node(nil), c.controllers...), c.brokers...)
}

// Node returns the node with that id, or nil.
func (c *Cluster) Node(id int32) *Node {
	for _, n := range c.Nodes() {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Bootstrap are the brokers' addresses, a client's seed brokers.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, n := range c.brokers {
		out = append(out, n.Addr())
	}
	return out
}

// BootstrapServers is Bootstrap joined with commas, for bootstrap.servers.
func (c *Cluster) BootstrapServers() string { return strings.Join(c.Bootstrap(), ",") }

// ControllerQuorumVoters is the static voter set, "1@127.0.0.1:port,...",
// the value of controller.quorum.voters.
func (c *Cluster) ControllerQuorumVoters() string {
	var out []string
	for _, n := range c.controllers {
		out = append(out, fmt.Sprintf("%d@%s", n.ID, n.Addr()))
	}
	return strings.Join(out, ",")
}

// ControllerEndpoints are the controllers' addresses, for a tool's
// --bootstrap-controller.
func (c *Cluster) ControllerEndpoints() string {
	var out []string
	for _, n := range c.controllers {
		out = append(out, n.Addr())
	}
	return strings.Join(out, ",")
}

// exited returns an error naming a node whose process has exited, if any.
func (c *Cluster) exited(nodes []*Node) error {
	for _, n := range nodes {
		if !n.Running() {
			_, err := n.proc.Exited()
			return fmt.Errorf("kit: %s %d exited (%v); its log is %s", n.Role, n.ID, err, n.Log())
		}
	}
	return nil
}

// pollInterval is the pause between two readiness probes.
const pollInterval = 100 * time.Millisecond
