package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/recovery"
	"github.com/kraftd/kraftd/server"
	"github.com/kraftd/kraftd/storage"
)

// confirmFlag is the flag without which recover changes nothing.
const confirmFlag = "yes-i-lost-the-majority"

func recoverCommand() *cli.Command {
	return &cli.Command{
		Name:  "recover",
		Usage: "make a stopped controller the only voter of its quorum after the majority is lost for good (docs/operations.md)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the surviving controller's server.properties (kraftd's or Apache's)"},
			&cli.StringFlag{Name: "from-broker-dir", Usage: "build the controller's empty metadata.log.dir from this broker metadata.log.dir's copy of the log, when no controller survived"},
			&cli.BoolFlag{Name: "dry-run", Usage: "report what the directory holds and change nothing"},
			&cli.BoolFlag{Name: confirmFlag, Usage: "confirm that the other voters are gone for good and this directory becomes the quorum's only copy"},
		},
		Action: runRecover,
	}
}

func runRecover(c *cli.Context) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	srv, err := loadConfig(c.String("config"), nil, nil)
	if err != nil {
		return err
	}
	cfg := recoveryConfig(srv)
	fsys, now, out := storage.OSFS{}, time.Now(), c.App.Writer
	brokerDir := c.String("from-broker-dir")
	if c.Bool("dry-run") || !c.Bool(confirmFlag) {
		if brokerDir != "" {
			// Nothing of the broker's copy is read before the confirmation:
			// the report comes from the built directory, after it.
			return cli.Exit(fmt.Sprintf("--from-broker-dir builds %s: pass --%s (kraftd dump-log or the metadata shell read the broker's copy as it is)",
				srv.MetadataLogDir, confirmFlag), 2)
		}
		st, err := recovery.Inspect(fsys, cfg, log)
		if st != nil {
			printState(out, st)
		}
		if err != nil {
			return recoverError(err)
		}
		if c.Bool("dry-run") {
			return nil
		}
		return cli.Exit(fmt.Sprintf("nothing changed: pass --%s once the other voters are gone for good", confirmFlag), 2)
	}
	var st *recovery.State
	var res *recovery.Result
	if brokerDir != "" {
		st, res, err = recovery.FromBrokerDir(fsys, brokerDir, cfg, now, log)
	} else {
		st, res, err = recovery.Recover(fsys, cfg, now, log)
	}
	if st != nil {
		printState(out, st)
	}
	if err != nil {
		return recoverError(err)
	}
	printResult(out, srv, res, c.String("config"))
	return nil
}

// recoveryConfig is what recovery reads of a controller's configuration.
func recoveryConfig(srv *server.Config) recovery.Config {
	cfg := recovery.Config{NodeID: srv.NodeID, MetadataLogDir: srv.MetadataLogDir}
	for _, v := range srv.Voters {
		cfg.StaticVoters = append(cfg.StaticVoters, v.ID)
	}
	for _, ep := range srv.ControllerEndpoints() {
		host := ep.Host
		if host == "" {
			host = "localhost"
		}
		cfg.Endpoints = append(cfg.Endpoints, metadata.VotersRecordEndpoint{Name: ep.Name, Host: host, Port: ep.Port})
	}
	return cfg
}

// recoverError makes a refusal an operator error (exit 2).
func recoverError(err error) error {
	for _, e := range []error{recovery.ErrNotVoter, recovery.ErrLocked, recovery.ErrNoVoters, recovery.ErrStaticVoters,
		recovery.ErrTargetFormatted, storage.ErrNotFormatted, storage.ErrWrongNode} {
		if errors.Is(err, e) {
			return cli.Exit(err.Error(), 2)
		}
	}
	return explainDiskError(err)
}

func printState(w io.Writer, s *recovery.State) {
	fmt.Fprintf(w, "directory:         %s\n", s.Dir)
	fmt.Fprintf(w, "cluster id:        %s (node %d, directory id %s)\n", s.ClusterID, s.NodeID, s.DirectoryID)
	if s.HasSnapshot {
		fmt.Fprintf(w, "newest snapshot:   %s (offsets below %d, epoch %d)\n", s.Snapshot.FileName(), s.Snapshot.EndOffset, s.Snapshot.Epoch)
	} else {
		fmt.Fprintf(w, "newest snapshot:   none\n")
	}
	if s.LogEnd > s.LogStart {
		fmt.Fprintf(w, "log:               offsets %d to %d, last epoch %d\n", s.LogStart, s.LogEnd-1, s.LogEpoch)
	} else {
		fmt.Fprintf(w, "log:               empty, from offset %d\n", s.LogStart)
	}
	fmt.Fprintf(w, "quorum-state:      epoch %d, leader %d, voted %d\n", s.QuorumState.LeaderEpoch, s.QuorumState.LeaderID, s.QuorumState.VotedID)
	fmt.Fprintf(w, "voters:            %v (%s), kraft.version %d\n", s.Voters, s.VotersFrom, s.KRaftVersion)
	fmt.Fprintf(w, "metadata.version:  %s (level %d)\n", controller.MetadataVersionName(s.MetadataVersion), s.MetadataVersion)
	if s.CommittedWhy == "" {
		fmt.Fprintf(w, "proven committed:  nothing (no snapshot, no metadata record after a commit)\n")
	} else {
		fmt.Fprintf(w, "proven committed:  offsets below %d: %s\n", s.Committed, s.CommittedWhy)
	}
	if s.LogEnd > s.Committed {
		fmt.Fprintf(w, "not proven:        offsets %d to %d may or may not have been committed; recovery keeps them and commits them\n", s.Committed, s.LogEnd-1)
	}
	fmt.Fprintf(w, "may be lost:       whatever the lost voters committed after offset %d, which never reached this node: "+
		"compare the metadata log end of every broker (kraftd dump-log on its __cluster_metadata-0) and recover from the longest\n", s.LogEnd-1)
}

func printResult(w io.Writer, srv *server.Config, r *recovery.Result, config string) {
	if r.Static {
		fmt.Fprintf(w, "\nRecovered: node %d is the only voter of a static quorum, quorum-state epoch %d.\n", srv.NodeID, r.Epoch)
	} else {
		kind := "its dynamic quorum"
		if r.Converted {
			kind = "a dynamic quorum (kraft.version 1; the static quorum was converted as Apache's kraft.version upgrade does)"
		}
		fmt.Fprintf(w, "\nRecovered: node %d (directory id %s) is the only voter of %s; VotersRecord and quorum-state at epoch %d.\n",
			srv.NodeID, r.DirectoryID, kind, r.Epoch)
	}
	fmt.Fprintf(w, "Next:\n  1. kraftd start --config %s: the node leads epoch %d alone; brokers reconnect and keep their data.\n", config, r.Epoch+1)
	if !r.Static {
		fmt.Fprintf(w, "  2. Add controllers as new voters: format each with --no-initial-controllers and "+
			"controller.quorum.bootstrap.servers naming this node, start it, then kafka-metadata-quorum.sh add-controller.\n")
		if len(srv.Voters) > 0 {
			fmt.Fprintf(w, "     controller.quorum.voters in %s may stay: the log's voter set overrides it; "+
				"new controllers need controller.quorum.bootstrap.servers instead.\n", config)
		}
	}
	fmt.Fprintf(w, "  Never start a lost voter with its old directory before this node leads (docs/operations.md): "+
		"wipe it, and add it back as a new voter.\n")
}
