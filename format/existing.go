package format

import (
	"fmt"
	"net"
	"slices"
	"strconv"
)

// Target is an address format asks whether a cluster already runs there,
// and the key or flag that named it.
type Target struct{ Addr, Key string }

// Answer is what the controller at Addr said: the cluster it serves, or ""
// when it answered but would not say (Err tells why).
type Answer struct {
	Addr      string
	ClusterID string
	Err       error
}

// Targets are the controllers to ask, each address once under the first
// key that names it: controller.quorum.bootstrap.servers, the initial
// controllers (--initial-controllers), then staticVoters, the host:port of
// each controller.quorum.voters entry.
func Targets(bootstrapServers []string, initial []Voter, staticVoters []string) []Target {
	var out []Target
	add := func(addr, key string) {
		if !slices.ContainsFunc(out, func(t Target) bool { return t.Addr == addr }) {
			out = append(out, Target{addr, key})
		}
	}
	for _, s := range bootstrapServers {
		add(s, "controller.quorum.bootstrap.servers")
	}
	for _, v := range initial {
		add(net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port))), "--initial-controllers")
	}
	for _, s := range staticVoters {
		add(s, "controller.quorum.voters")
	}
	return out
}

// CheckAnswers refuses to format over a cluster that answered at one of
// targets:
//   - a format that bootstraps a new quorum (--standalone or
//     --initial-controllers) is refused by any cluster answering: a second
//     quorum of the same cluster id would split it (a lost first node
//     formatted anew), and a quorum beside another cluster is a mistaken
//     address;
//   - --no-initial-controllers and a static quorum join one, so only a
//     cluster of another id refuses: the node could never join it.
//
// Addresses that nothing answers at are fine; so is a controller that will
// not say its cluster (an Apache before 3.7), except where any quorum
// refuses.
func CheckAnswers(clusterID string, targets []Target, answers []Answer, bootstrap bool) error {
	for _, a := range answers {
		key := targets[slices.IndexFunc(targets, func(t Target) bool { return t.Addr == a.Addr })].Key
		switch {
		case bootstrap && a.ClusterID == "":
			return fmt.Errorf("%s: a controller already answers at %s (it does not say its cluster: %v), so this would "+
				"bootstrap a second quorum beside it. %s", key, a.Addr, a.Err, existingClusterFix("<its cluster id>"))
		case bootstrap:
			second := "beside it"
			if a.ClusterID == clusterID {
				second = "of the same cluster, which would split it"
			}
			return fmt.Errorf("%s: the controller at %s already serves cluster %s, so this would bootstrap a second quorum %s. %s",
				key, a.Addr, a.ClusterID, second, existingClusterFix(a.ClusterID))
		case a.ClusterID != "" && a.ClusterID != clusterID:
			return fmt.Errorf("%s: the controller at %s serves cluster %s, not --cluster-id %s: this node could never join it. "+
				"Format it with --cluster-id %s, or correct %s; pass --ignore-existing-cluster to format anyway",
				key, a.Addr, a.ClusterID, clusterID, a.ClusterID, key)
		}
	}
	return nil
}

func existingClusterFix(clusterID string) string {
	return fmt.Sprintf("To add this node to that quorum, format it with --no-initial-controllers --cluster-id %s and add it "+
		"(kafka-metadata-quorum.sh add-controller, or controller.quorum.auto.join.enable=true); if that cluster is to be "+
		"replaced and must not be joined, pass --ignore-existing-cluster (docs/operations.md, \"Refused mistakes\")", clusterID)
}
