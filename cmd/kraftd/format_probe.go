package main

import (
	"fmt"
	"net"
	"os"
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

// refuseExistingCluster asks the controllers this node's configuration and
// flags name whether a cluster already runs there, and refuses (exit 2) to
// format over it by format.CheckAnswers' rules. bootstrap says this format
// bootstraps a new quorum.
func refuseExistingCluster(cfg *server.Config, clusterID string, voters []format.Voter, bootstrap bool) error {
	var static []string
	for _, v := range cfg.Voters {
		static = append(static, net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port))))
	}
	targets := format.Targets(cfg.BootstrapServers, voters, static)
	if len(targets) == 0 {
		return nil
	}
	addrs := make([]string, len(targets))
	for i, t := range targets {
		addrs[i] = t.Addr
	}
	if err := cfg.LoadTLS(zerolog.Nop()); err != nil {
		fmt.Fprintf(os.Stderr, "kraftd: not asking %s whether a cluster runs there: %v\n", strings.Join(addrs, ", "), err)
		return nil
	}
	probed, err := embed.ProbeClusters(cfg, addrs, probeTimeout)
	if err != nil {
		return err
	}
	answers := make([]format.Answer, len(probed))
	for i, a := range probed {
		answers[i] = format.Answer(a)
	}
	if err := format.CheckAnswers(clusterID, targets, answers, bootstrap); err != nil {
		return cli.Exit(err.Error(), 2)
	}
	return nil
}
