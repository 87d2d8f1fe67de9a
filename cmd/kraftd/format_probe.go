package main

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/embed"
	"github.com/kraftd/kraftd/format"
	"github.com/kraftd/kraftd/server"
)

// probeTimeout bounds the whole probe: every address is asked at once, an
// address nothing listens at fails at once, and only one that swallows
// packets makes format wait this long.
const probeTimeout = 3 * time.Second

// probeSource is an address format asks, and the key or flag that named it.
type probeSource struct{ addr, key string }

// refuseExistingCluster asks the controllers this node's configuration and
// flags name whether a cluster already runs there, and refuses (exit 2) to
// format over it:
//   - --standalone or --initial-controllers bootstrap a new quorum, so any
//     cluster answering at controller.quorum.bootstrap.servers or at the
//     other initial controllers refuses: a second quorum of the same
//     cluster id would split it (a lost first node formatted anew), and a
//     quorum beside another cluster is a mistaken address;
//   - --no-initial-controllers and a static quorum join one, so only a
//     cluster of another id refuses: the node could never join it.
//
// Addresses that nothing answers at are fine; so is a controller that will
// not say its cluster (an Apache before 3.7), except where any quorum
// refuses.
func refuseExistingCluster(cfg *server.Config, clusterID string, voters []format.Voter, bootstrap bool) error {
	var sources []probeSource
	add := func(addr, key string) {
		if !slices.ContainsFunc(sources, func(s probeSource) bool { return s.addr == addr }) {
			sources = append(sources, probeSource{addr, key})
		}
	}
	for _, s := range cfg.BootstrapServers {
		add(s, "controller.quorum.bootstrap.servers")
	}
	for _, v := range voters {
		add(net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port))), "--initial-controllers")
	}
	for _, v := range cfg.Voters {
		add(net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port))), "controller.quorum.voters")
	}
	if len(sources) == 0 {
		return nil
	}
	addrs := make([]string, len(sources))
	for i, s := range sources {
		addrs[i] = s.addr
	}
	if err := cfg.LoadTLS(zerolog.Nop()); err != nil {
		fmt.Fprintf(os.Stderr, "kraftd: not asking %s whether a cluster runs there: %v\n", strings.Join(addrs, ", "), err)
		return nil
	}
	answers, err := embed.ProbeClusters(cfg, addrs, probeTimeout)
	if err != nil {
		return err
	}
	for _, a := range answers {
		key := sources[slices.Index(addrs, a.Addr)].key
		switch {
		case bootstrap && a.ClusterID == "":
			return cli.Exit(fmt.Sprintf("%s: a controller already answers at %s (it does not say its cluster: %v), so this would "+
				"bootstrap a second quorum beside it. %s", key, a.Addr, a.Err, existingClusterFix("<its cluster id>")), 2)
		case bootstrap:
			second := "beside it"
			if a.ClusterID == clusterID {
				second = "of the same cluster, which would split it"
			}
			return cli.Exit(fmt.Sprintf("%s: the controller at %s already serves cluster %s, so this would bootstrap a second quorum %s. %s",
				key, a.Addr, a.ClusterID, second, existingClusterFix(a.ClusterID)), 2)
		case a.ClusterID != "" && a.ClusterID != clusterID:
			return cli.Exit(fmt.Sprintf("%s: the controller at %s serves cluster %s, not --cluster-id %s: this node could never join it. "+
				"Format it with --cluster-id %s, or correct %s; pass --ignore-existing-cluster to format anyway",
				key, a.Addr, a.ClusterID, clusterID, a.ClusterID, key), 2)
		}
	}
	return nil
}

func existingClusterFix(clusterID string) string {
	return fmt.Sprintf("To add this node to that quorum, format it with --no-initial-controllers --cluster-id %s and add it "+
		"(kafka-metadata-quorum.sh add-controller, or controller.quorum.auto.join.enable=true); if that cluster is to be "+
		"replaced and must not be joined, pass --ignore-existing-cluster (docs/operations.md, \"Refused mistakes\")", clusterID)
}
