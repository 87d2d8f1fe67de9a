package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/server"
	"github.com/kraftd/kraftd/storage"
)

func startCommand() *cli.Command {
	return &cli.Command{
		Name:  "start",
		Usage: "run a controller from a server.properties file",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the controller's server.properties"},
		},
		Action: runStart,
	}
}

func runStart(c *cli.Context) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(c.String("config"), func(key string) {
		log.Warn().Str("key", key).Msg("unknown or unused configuration key")
	})
	if err != nil {
		return err
	}
	disk, err := server.OpenDisk(storage.OSFS{}, cfg, log)
	if err != nil {
		return err
	}
	node, err := server.NewNode(cfg, disk, log)
	if err != nil {
		disk.Close()
		return err
	}
	srv := server.New(cfg, node, log)
	if err := srv.Listen(); err != nil {
		disk.Close()
		return err
	}
	log.Info().Int32("node", cfg.NodeID).Str("cluster", disk.Meta.ClusterID).Str("dir", cfg.MetadataLogDir).Msg("kraftd started")

	// KRAFTD_CPUPROFILE=prefix writes a Go CPU profile of this run to
	// prefix.<pid>, for profiling a node under a benchmark.
	if prefix := os.Getenv("KRAFTD_CPUPROFILE"); prefix != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	runErr := make(chan error, 1)
	go func() { runErr <- node.Run() }()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-signals:
		log.Info().Str("signal", sig.String()).Msg("shutting down: resigning leadership")
		err = node.Stop()
	case err = <-runErr:
	}
	srv.Close()
	if err != nil {
		return fmt.Errorf("stopped: %w", err)
	}
	log.Info().Msg("stopped")
	return nil
}
