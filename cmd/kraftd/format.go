package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/format"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/server"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/uuid"
)

func formatCommand() *cli.Command {
	return &cli.Command{
		Name:  "format",
		Usage: "format the metadata and log directories, like kafka-storage.sh format",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the controller's server.properties"},
			&cli.StringFlag{Name: "cluster-id", Aliases: []string{"t"}, Required: true, Usage: "the cluster id (see random-uuid)"},
			&cli.StringFlag{Name: "release-version", Aliases: []string{"r"}, Usage: "metadata.version to bootstrap, 3.3-IV3 to 4.4-IV2, or a release 3.3 to 4.4 for its newest level (default: 4.4-IV2, the latest kraftd supports)"},
			&cli.StringSliceFlag{Name: "feature", Aliases: []string{"f"}, Usage: "a feature level to bootstrap, name=level"},
			&cli.BoolFlag{Name: "standalone", Aliases: []string{"s"}, Usage: "this controller alone forms the initial dynamic quorum"},
			&cli.StringFlag{Name: "initial-controllers", Aliases: []string{"I"}, Usage: "the initial dynamic quorum: id@host:port:directoryId,..."},
			&cli.BoolFlag{Name: "no-initial-controllers", Aliases: []string{"N"}, Usage: "join an existing dynamic quorum later"},
			&cli.StringSliceFlag{Name: "add-scram", Aliases: []string{"S"}, Usage: "a SCRAM credential to bootstrap, e.g. 'SCRAM-SHA-512=[name=alice,password=alice-secret]' or 'SCRAM-SHA-256=[name=alice,iterations=8192,salt=\"N3E=\",saltedpassword=\"YCE=\"]'"},
			&cli.BoolFlag{Name: "ignore-formatted", Aliases: []string{"g"}, Usage: "skip directories that are already formatted"},
			&cli.BoolFlag{Name: "ignore-existing-cluster", Usage: "format even where controllers named by the configuration or flags already answer with a cluster (format otherwise refuses to bootstrap a second quorum, or to join a cluster of another id)"},
		},
		Action: runFormat,
	}
}

func runFormat(c *cli.Context) error {
	cfg, err := loadConfig(c.String("config"), nil, nil)
	if err != nil {
		return err
	}
	clusterID := c.String("cluster-id")
	if _, err := uuid.Parse(clusterID); err != nil {
		return cli.Exit(fmt.Sprintf("--cluster-id %q: %v", clusterID, err), 2)
	}
	mv := controller.LatestMetadataVersion
	if rv := c.String("release-version"); rv != "" {
		if mv, err = controller.ParseReleaseVersion(rv); err != nil {
			return cli.Exit("--release-version: "+err.Error(), 2)
		}
	}

	quorumFlags := 0
	for _, f := range []string{"standalone", "initial-controllers", "no-initial-controllers"} {
		if c.IsSet(f) {
			quorumFlags++
		}
	}
	if quorumFlags > 1 {
		return cli.Exit("--standalone, --initial-controllers and --no-initial-controllers exclude each other", 2)
	}
	if quorumFlags == 0 && len(cfg.Voters) == 0 {
		return cli.Exit("controller.quorum.voters is empty: use --standalone, --initial-controllers or --no-initial-controllers", 2)
	}
	if quorumFlags == 1 && len(cfg.Voters) > 0 {
		return cli.Exit("controller.quorum.voters is set: a static quorum takes none of --standalone, --initial-controllers, --no-initial-controllers", 2)
	}

	kraftVersion := int16(0)
	if quorumFlags == 1 {
		kraftVersion = 1
	}
	levels, err := format.FeatureLevels(mv, kraftVersion, c.StringSlice("feature"))
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}

	scram, err := format.ScramRecords(c.StringSlice("add-scram"), mv)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}

	var voters []format.Voter
	switch {
	case c.Bool("standalone"):
		ep := cfg.ControllerEndpoints()
		if len(ep) == 0 {
			return cli.Exit("--standalone: no controller listener in listeners", 2)
		}
		host := ep[0].Host
		if host == "" {
			host = "localhost"
		}
		voters = []format.Voter{{ID: cfg.NodeID, Host: host, Port: ep[0].Port, DirectoryID: uuid.MustRandom(), Listener: ep[0].Name}}
	case c.IsSet("initial-controllers"):
		if voters, err = format.ParseInitialControllers(c.String("initial-controllers"), cfg.ControllerListenerName[0]); err != nil {
			return cli.Exit("--initial-controllers: "+err.Error(), 2)
		}
		if err := checkInitialVoter(cfg, voters); err != nil {
			return cli.Exit("--initial-controllers: "+err.Error(), 2)
		}
	}

	fsys := storage.OSFS{}
	if err := server.CheckLogDirs(fsys, cfg, clusterID); err != nil {
		return cli.Exit(fmt.Sprintf("%s: %v", c.String("config"), err), 2)
	}

	dirs := append([]string{cfg.MetadataLogDir}, cfg.LogDirs...)
	slices.Sort(dirs[1:])
	dirs = slices.Compact(dirs)
	var todo []string
	for _, dir := range dirs {
		formatted, err := storage.IsFormatted(fsys, dir)
		switch {
		case err != nil:
			return err
		case formatted && c.Bool("ignore-formatted"):
			continue
		case formatted:
			return fmt.Errorf("log directory %s is already formatted; use --ignore-formatted to skip it and format the others", dir)
		}
		if err := storage.CheckNotLocked(fsys, dir); err != nil {
			return cli.Exit(fmt.Sprintf("log directory %s is in use: %v", dir, err), 2)
		}
		todo = append(todo, dir)
	}
	if len(todo) == 0 {
		fmt.Println("All of the log directories are already formatted.")
		return nil
	}

	if !c.Bool("ignore-existing-cluster") {
		probed := voters
		if c.Bool("standalone") {
			probed = nil // its own address: bootstrap.servers names it if anything does
		}
		if err := refuseExistingCluster(cfg, clusterID, probed, len(voters) > 0); err != nil {
			return err
		}
	}

	records := append(format.Records(mv, levels), scram...)
	now := time.Now()
	for _, dir := range todo {
		isMeta := dir == cfg.MetadataLogDir
		boot := metadata.Bootstrap{Records: records}
		kind := "data directory"
		switch {
		case isMeta && len(voters) > 0:
			kind = "dynamic metadata voter directory"
			boot.Voters, boot.KRaftVersion = format.VotersRecord(voters), kraftVersion
		case isMeta:
			// Apache 4.4 names a --no-initial-controllers directory so too:
			// only a directory with voters is "dynamic ... voter".
			kind = "metadata directory"
		}
		fmt.Printf("Formatting %s %s with metadata.version %s.\n", kind, dir, controller.MetadataVersionName(mv))
		if err := format.Dir(fsys, dir, clusterID, cfg.NodeID, boot, now); err != nil {
			return err
		}
	}
	return nil
}

// checkInitialVoter refuses an --initial-controllers list that leaves out
// the node being formatted, or lists it at a port it does not serve.
// Apache formats the first as an observer that knows the initial voters,
// which is rarely what was meant: an initial controller left out by a typo
// would wait as an observer, and the quorum would run one voter short.
func checkInitialVoter(cfg *server.Config, voters []format.Voter) error {
	i := slices.IndexFunc(voters, func(v format.Voter) bool { return v.ID == cfg.NodeID })
	if i < 0 {
		return fmt.Errorf("does not list node.id %d, the node being formatted, so it would be no voter. Add %d@host:port:directoryId "+
			"to the list (the same list on every initial controller); or, for a controller that joins the quorum later, format it "+
			"with --no-initial-controllers (controller.quorum.bootstrap.servers set) and add it with add-controller or "+
			"controller.quorum.auto.join.enable=true", cfg.NodeID, cfg.NodeID)
	}
	return cfg.CheckOwnEndpoint(voters[i].Host, voters[i].Port)
}

// loadConfig reads and validates a server.properties file. Unknown keys are
// reported through warn (when given).
func loadConfig(path string, overrides []string, warn func(key string)) (*server.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, cli.Exit(fmt.Sprintf("--config: %v", err), 2)
	}
	defer f.Close()
	props, err := server.ParseProperties(f)
	if err != nil {
		return nil, cli.Exit(fmt.Sprintf("%s: %v", path, err), 2)
	}
	if err := applyOverrides(props, overrides); err != nil {
		return nil, err
	}
	cfg, err := server.ParseConfig(props)
	if err != nil {
		if len(overrides) > 0 {
			path += " with --override"
		}
		return nil, cli.Exit(fmt.Sprintf("%s: %v", path, err), 2)
	}
	if warn != nil {
		for _, k := range cfg.Unknown {
			warn(k)
		}
	}
	return cfg, nil
}

// applyOverrides sets each key=value of --override over the file's
// properties, as kafka-server-start.sh's --override does; the values are
// then validated with the file's. The value is everything after the first
// "=", so it may hold "=" itself.
func applyOverrides(props map[string]string, overrides []string) error {
	for _, o := range overrides {
		key, value, ok := strings.Cut(o, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return cli.Exit(fmt.Sprintf("--override %q: want key=value", o), 2)
		}
		props[key] = value
	}
	return nil
}

func randomUUID() string { return uuid.MustRandom().String() }
