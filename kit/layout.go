package kit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kraftd/kraftd/internal/loopback"
)

// Role is what a node of a kit cluster is.
type Role string

// The roles of a kit cluster's nodes.
const (
	RoleKraftdController Role = "kraftd-controller"
	RoleApacheController Role = "apache-controller"
	RoleBroker           Role = "broker"
)

// stateFile is the file in a cluster's Dir that records its layout (cluster
// id, nodes and ports), so that a later run starts the same cluster again,
// and the PIDs of a running one, for `kraftd cluster status` and `down`.
const stateFile = "cluster.json"

// layoutVersion is the state file's format version.
const layoutVersion = 1

// Layout is what stays fixed about a cluster across runs: the nodes, their
// ports (the brokers' registrations and the static voters name them) and
// the cluster id. State files hold it as JSON.
type Layout struct {
	FormatVersion int          `json:"format_version"`
	ClusterID     string       `json:"cluster_id"`
	Kafka         string       `json:"kafka"`
	TLS           bool         `json:"tls,omitempty"`
	SASL          string       `json:"sasl,omitempty"` // the brokers' mechanism
	SASLPassword  string       `json:"sasl_password,omitempty"`
	Nodes         []NodeLayout `json:"nodes"`
	// SupervisorPID is the program running the cluster, while it runs
	// (`kraftd cluster up`); 0 when none is.
	SupervisorPID int `json:"supervisor_pid,omitempty"`
}

// NodeLayout is one node of a Layout.
type NodeLayout struct {
	ID   int32 `json:"id"`
	Role Role  `json:"role"`
	Port int   `json:"port"`
	PID  int   `json:"pid,omitempty"` // while running
}

// newLayout gives every node of spec a free loopback port.
func newLayout(spec Spec) (*Layout, error) {
	l := &Layout{FormatVersion: layoutVersion, ClusterID: newUUID(), Kafka: spec.Kafka, TLS: spec.TLS, SASL: spec.SASL}
	if spec.SASL != "" {
		l.SASLPassword = newSASLPassword()
	}
	id := int32(1)
	for i := 0; i < spec.KraftdControllers+spec.ApacheControllers; i++ {
		role := RoleKraftdController
		if i >= spec.KraftdControllers {
			role = RoleApacheController
		}
		l.Nodes = append(l.Nodes, NodeLayout{ID: id, Role: role})
		id++
	}
	for i := range spec.Brokers {
		l.Nodes = append(l.Nodes, NodeLayout{ID: int32(brokerIDBase + i), Role: RoleBroker})
	}
	ports, err := loopback.FreePorts(len(l.Nodes))
	if err != nil {
		return nil, err
	}
	for i := range l.Nodes {
		l.Nodes[i].Port = ports[i]
	}
	return l, nil
}

// matches says how layout l differs from what spec asks for, if it does.
func (l *Layout) matches(spec Spec) error {
	count := map[Role]int{}
	for _, n := range l.Nodes {
		count[n.Role]++
	}
	if l.Kafka != spec.Kafka || count[RoleBroker] != spec.Brokers ||
		count[RoleKraftdController] != spec.KraftdControllers || count[RoleApacheController] != spec.ApacheControllers {
		return fmt.Errorf("kit: the directory holds Apache Kafka %s with %d brokers, %d kraftd and %d Apache controllers; asked for %s with %d, %d and %d: use another directory",
			l.Kafka, count[RoleBroker], count[RoleKraftdController], count[RoleApacheController],
			spec.Kafka, spec.Brokers, spec.KraftdControllers, spec.ApacheControllers)
	}
	if l.TLS != spec.TLS {
		return fmt.Errorf("kit: the directory holds a cluster with TLS %v; asked for TLS %v: use another directory", l.TLS, spec.TLS)
	}
	if l.SASL != spec.SASL {
		return fmt.Errorf("kit: the directory holds a cluster with SASL %q; asked for SASL %q: use another directory", l.SASL, spec.SASL)
	}
	return nil
}

// ReadLayout reads the state file of a cluster directory. It returns an
// error wrapping os.ErrNotExist when the directory holds no cluster.
func ReadLayout(dir string) (*Layout, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	return parseLayout(b)
}

// parseLayout decodes and checks a state file: a damaged one is refused
// with a reason, never half used.
func parseLayout(b []byte) (*Layout, error) {
	var l Layout
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("kit: %s: %w", stateFile, err)
	}
	if l.FormatVersion != layoutVersion {
		return nil, fmt.Errorf("kit: %s: format version %d, want %d", stateFile, l.FormatVersion, layoutVersion)
	}
	if _, err := releaseLine(l.Kafka); err != nil {
		return nil, fmt.Errorf("kit: %s: %w", stateFile, err)
	}
	if len(l.ClusterID) != 22 {
		return nil, fmt.Errorf("kit: %s: cluster id %q is not a Kafka Uuid", stateFile, l.ClusterID)
	}
	if err := checkSASLMechanism(l.SASL); err != nil {
		return nil, fmt.Errorf("kit: %s: %w", stateFile, err)
	}
	if (l.SASL != "") != (l.SASLPassword != "") {
		return nil, fmt.Errorf("kit: %s: SASL %q with a password of %d characters", stateFile, l.SASL, len(l.SASLPassword))
	}
	if len(l.Nodes) == 0 || len(l.Nodes) > maxNodes+maxControllers {
		return nil, fmt.Errorf("kit: %s: %d nodes", stateFile, len(l.Nodes))
	}
	ids, controllers, brokers := map[int32]bool{}, 0, 0
	for _, n := range l.Nodes {
		switch {
		case ids[n.ID]:
			return nil, fmt.Errorf("kit: %s: node id %d twice", stateFile, n.ID)
		case n.Port <= 0 || n.Port > 65535:
			return nil, fmt.Errorf("kit: %s: node %d: port %d", stateFile, n.ID, n.Port)
		case n.PID < 0:
			return nil, fmt.Errorf("kit: %s: node %d: pid %d", stateFile, n.ID, n.PID)
		}
		ids[n.ID] = true
		switch n.Role {
		case RoleKraftdController, RoleApacheController:
			controllers++
		case RoleBroker:
			brokers++
		default:
			return nil, fmt.Errorf("kit: %s: node %d: role %q", stateFile, n.ID, n.Role)
		}
	}
	if controllers == 0 || brokers == 0 {
		return nil, fmt.Errorf("kit: %s: %d controllers and %d brokers", stateFile, controllers, brokers)
	}
	return &l, nil
}

// writeLayout replaces the state file atomically (temporary file, rename),
// readable by its owner only: it may hold the SASL password.
func writeLayout(dir string, l *Layout) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	return nil
}

// loadOrNewLayout reads dir's state file, or makes a new layout when there
// is none.
func loadOrNewLayout(dir string, spec Spec) (l *Layout, existing bool, err error) {
	l, err = ReadLayout(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		l, err = newLayout(spec)
		return l, false, err
	case err != nil:
		return nil, false, err
	}
	return l, true, l.matches(spec)
}
