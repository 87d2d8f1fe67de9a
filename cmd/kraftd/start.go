package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/embed"
	"github.com/kraftd/kraftd/metrics"
	snode "github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/server"
	"github.com/kraftd/kraftd/storage"
)

func startCommand() *cli.Command {
	return &cli.Command{
		Name:  "start",
		Usage: "run a controller from a server.properties file",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the controller's server.properties"},
			&cli.StringSliceFlag{Name: "override", Usage: "key=value set over the properties file's, like kafka-server-start.sh's --override (repeatable)"},
			&cli.BoolFlag{Name: "truncate-corrupt-log", Usage: "cut the metadata log at a corrupt batch before its active segment, deleting everything after it, instead of refusing to start"},
			&cli.BoolFlag{Name: "accept-lost-log", Usage: "start with an empty metadata log in a directory whose log was lost, instead of refusing to start"},
		},
		Action: runStart,
	}
}

func runStart(c *cli.Context) error {
	began := time.Now()
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(c.String("config"), c.StringSlice("override"), func(key string) {
		log.Warn().Str("key", key).Msg("unknown or unused configuration key")
	})
	if err != nil {
		return err
	}
	// Stores are read at start only (format needs none), and a store that
	// does not load is a configuration error like any other.
	if err := cfg.LoadTLS(log); err != nil {
		return cli.Exit(fmt.Sprintf("%s: %v", c.String("config"), err), 2)
	}
	overrides := embed.DiskOverrides{TruncateCorruptLog: c.Bool("truncate-corrupt-log"), AcceptLostLog: c.Bool("accept-lost-log")}
	disk, err := embed.OpenDiskWith(storage.OSFS{}, cfg, overrides, log)
	if errors.Is(err, storage.ErrLocked) {
		return cli.Exit(fmt.Sprintf("%s: metadata.log.dir: %v", c.String("config"), err), 2)
	}
	if err != nil {
		return configExit(c.String("config"), explainDiskError(err))
	}
	var meter *metrics.Metrics
	if cfg.Ops.MetricsAddr != "" {
		meter = metrics.New()
	}
	node, err := embed.NewMeteredNode(cfg, disk, nodeMeter(meter), log)
	if err != nil {
		disk.Close()
		return configExit(c.String("config"), err)
	}
	srv := server.New(cfg, node, log)
	if meter != nil {
		srv.SetMeter(meter)
	}
	if err := srv.Listen(); err != nil {
		disk.Close()
		// A listener that cannot be bound is fixed in the properties, like
		// the metrics listener below: a configuration error.
		return cli.Exit(fmt.Sprintf("%s: %v", c.String("config"), err), 2)
	}
	if meter != nil {
		ml, err := meter.Serve(cfg.Ops.MetricsAddr, node, metrics.ServeOptions{Pprof: cfg.Ops.Pprof,
			Bounds: metrics.ReadyBounds{MaxContactAgeMs: cfg.Ops.ReadyMaxContactAgeMs, MaxLagRecords: cfg.Ops.ReadyMaxLagRecords}}, log)
		if err != nil {
			srv.Close()
			disk.Close()
			return cli.Exit(fmt.Sprintf("%s: kraftd.metrics.listener: %v", c.String("config"), err), 2)
		}
		defer ml.Close()
	}
	// Signals are caught before "kraftd started" is logged, so whatever
	// waits for that line may stop the node gracefully at once.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	log.Info().Int32("node", cfg.NodeID).Str("cluster", disk.Meta.ClusterID).Str("dir", cfg.MetadataLogDir).
		Dur("startup_took_ms", time.Since(began)).Msg("kraftd started")

	// KRAFTD_CPUPROFILE=prefix writes Go CPU profiles of this run, for
	// profiling a node under a benchmark: prefix.<pid>.<n>, one every ten
	// seconds, so that a benchmark's phases can be told apart and a node
	// that is SIGKILLed leaves all but its last.
	if prefix := os.Getenv("KRAFTD_CPUPROFILE"); prefix != "" {
		stop := profileInSegments(fmt.Sprintf("%s.%d", prefix, os.Getpid()), 10*time.Second)
		defer stop()
	}
	runErr := make(chan error, 1)
	go func() { runErr <- node.Run() }()
	var stopping time.Time
	select {
	case sig := <-signals:
		stopping = time.Now()
		log.Info().Str("signal", sig.String()).Msg("shutting down: resigning leadership")
		err = node.Stop()
	case err = <-runErr:
		stopping = time.Now()
	}
	srv.Close()
	if err != nil {
		return fmt.Errorf("stopped: %w", err)
	}
	log.Info().Dur("took_ms", time.Since(stopping)).Msg("stopped")
	return nil
}

// profileInSegments writes CPU profiles to name.000, name.001, ..., each
// covering every; the returned function ends the last one.
func profileInSegments(name string, every time.Duration) (stop func()) {
	var f *os.File
	begin := func(n int) {
		var err error
		if f, err = os.Create(fmt.Sprintf("%s.%03d", name, n)); err == nil && pprof.StartCPUProfile(f) != nil {
			f.Close()
			f = nil
		}
	}
	end := func() {
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
			f = nil
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for n := 0; ; n++ {
			begin(n)
			select {
			case <-done:
				end()
				return
			case <-tick.C:
				end()
			}
		}
	}()
	return func() { close(done); <-finished }
}

// nodeMeter is m as the runtime's meter, a nil interface when m is nil.
func nodeMeter(m *metrics.Metrics) snode.Meter {
	if m == nil {
		return nil
	}
	return m
}

// configExit makes a *server.ConfigError, a directory or setting that
// contradicts the file, a configuration error: exit 2.
func configExit(path string, err error) error {
	var ce *server.ConfigError
	if errors.As(err, &ce) {
		return cli.Exit(fmt.Sprintf("%s: %v", path, err), 2)
	}
	return err
}

// explainDiskError adds to a refusal to open the directory what the
// operator can do about it.
func explainDiskError(err error) error {
	switch {
	case errors.Is(err, storage.ErrCorruptLog):
		return fmt.Errorf("%w\nThe damaged data was acknowledged, so kraftd does not cut it on its own. Restore the file "+
			"from a copy, or restart once with --truncate-corrupt-log to cut the log there and delete what follows "+
			"(a voter of a quorum then fetches what is missing from the leader; a single node loses it)", err)
	case errors.Is(err, storage.ErrLostLog):
		return fmt.Errorf("%w\nThe records this node had acknowledged are gone; started like this it would serve an empty "+
			"log and, in a quorum, vote as if it had never held them. Either reformat the directory and add the node "+
			"back as a new voter of a dynamic quorum, or restart once with --accept-lost-log to start with an empty log "+
			"(a single node then begins its history anew; a voter of a static quorum may help elect a leader that "+
			"lacks committed records)", err)
	}
	return err
}
