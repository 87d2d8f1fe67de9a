package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/controller"
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

// initialVoter is one entry of --initial-controllers or --standalone.
type initialVoter struct {
	id       int32
	host     string
	port     uint16
	dirID    uuid.UUID
	listener string
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

	levels := controller.DefaultFeatureLevels(mv)
	kraftVersion := int16(0)
	if quorumFlags == 1 {
		kraftVersion = 1
	}
	for _, f := range c.StringSlice("feature") {
		name, value, ok := strings.Cut(f, "=")
		level, err := strconv.ParseInt(value, 10, 16)
		if !ok || err != nil {
			return cli.Exit(fmt.Sprintf("--feature %q: want name=level", f), 2)
		}
		switch name {
		case controller.MetadataVersionFeature:
			return cli.Exit("--feature: set metadata.version with --release-version", 2)
		case controller.KRaftVersionFeature:
			if int16(level) != kraftVersion {
				return cli.Exit(fmt.Sprintf("--feature kraft.version=%d contradicts the quorum flags, which call for %d", level, kraftVersion), 2)
			}
			continue
		}
		levels[name] = int16(level)
	}
	if kraftVersion == 1 && mv < controller.MVKRaftVersion1 {
		return cli.Exit(fmt.Sprintf("kraft.version 1 needs metadata.version %s or newer", controller.MetadataVersionName(controller.MVKRaftVersion1)), 2)
	}

	scram, err := scramRecords(c.StringSlice("add-scram"), mv)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}

	var voters []initialVoter
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
		voters = []initialVoter{{id: cfg.NodeID, host: host, port: ep[0].Port, dirID: uuid.MustRandom(), listener: ep[0].Name}}
	case c.IsSet("initial-controllers"):
		if voters, err = parseInitialControllers(c.String("initial-controllers"), cfg.ControllerListenerName[0]); err != nil {
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

	bootstrap := append(bootstrapRecords(mv, levels), scram...)
	now := time.Now()
	for _, dir := range todo {
		isMeta := dir == cfg.MetadataLogDir
		boot := metadata.Bootstrap{Records: bootstrap}
		kind := "data directory"
		switch {
		case isMeta && len(voters) > 0:
			kind = "dynamic metadata voter directory"
			boot.Voters, boot.KRaftVersion = votersRecord(voters), kraftVersion
		case isMeta:
			// Apache 4.4 names a --no-initial-controllers directory so too:
			// only a directory with voters is "dynamic ... voter".
			kind = "metadata directory"
		}
		fmt.Printf("Formatting %s %s with metadata.version %s.\n", kind, dir, controller.MetadataVersionName(mv))
		f := storage.NodeDirFormat{ClusterID: clusterID, NodeID: cfg.NodeID, DirectoryID: boot.DirectoryID(cfg.NodeID), Now: now}
		f.BootstrapCheckpoint, f.BootstrapSnapshot = metadata.EncodeBootstrap(boot, now.UnixMilli())
		if err := storage.FormatNodeDir(fsys, dir, f); err != nil {
			return err
		}
	}
	return nil
}

// bootstrapRecords are the FeatureLevelRecords of bootstrap.checkpoint:
// metadata.version first, then each other feature with a level above 0.
// The --add-scram credentials follow them in the same file, as Apache
// 4.1's format writes them (4.4 writes the same list into the bootstrap
// snapshot instead; kraftd reads either and writes 4.1's layout).
func bootstrapRecords(mv int16, levels map[string]int16) []metadata.Record {
	records := []metadata.Record{&metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: mv}}
	names := make([]string, 0, len(levels))
	for name, level := range levels {
		if level > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		records = append(records, &metadata.FeatureLevelRecord{Name: name, FeatureLevel: levels[name]})
	}
	return records
}

// votersRecord is the initial voter set of a dynamic quorum, which format
// writes into the bootstrap snapshot.
func votersRecord(voters []initialVoter) *metadata.VotersRecord {
	set := &metadata.VotersRecord{}
	for _, v := range voters {
		set.Voters = append(set.Voters, metadata.VotersRecordVoter{
			VoterId:             v.id,
			VoterDirectoryId:    v.dirID,
			Endpoints:           []metadata.VotersRecordEndpoint{{Name: v.listener, Host: v.host, Port: v.port}},
			KRaftVersionFeature: metadata.VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1},
		})
	}
	return set
}

// checkInitialVoter refuses an --initial-controllers list that leaves out
// the node being formatted, or lists it at a port it does not serve.
// Apache formats the first as an observer that knows the initial voters,
// which is rarely what was meant: an initial controller left out by a typo
// would wait as an observer, and the quorum would run one voter short.
func checkInitialVoter(cfg *server.Config, voters []initialVoter) error {
	i := slices.IndexFunc(voters, func(v initialVoter) bool { return v.id == cfg.NodeID })
	if i < 0 {
		return fmt.Errorf("does not list node.id %d, the node being formatted, so it would be no voter. Add %d@host:port:directoryId "+
			"to the list (the same list on every initial controller); or, for a controller that joins the quorum later, format it "+
			"with --no-initial-controllers (controller.quorum.bootstrap.servers set) and add it with add-controller or "+
			"controller.quorum.auto.join.enable=true", cfg.NodeID, cfg.NodeID)
	}
	return cfg.CheckOwnEndpoint(voters[i].host, voters[i].port)
}

// parseInitialControllers reads `id@host:port:directoryId,...`.
func parseInitialControllers(s, listener string) ([]initialVoter, error) {
	var out []initialVoter
	for _, entry := range strings.Split(s, ",") {
		id, rest, ok := strings.Cut(strings.TrimSpace(entry), "@")
		n, err := strconv.ParseInt(id, 10, 32)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not id@host:port:directoryId", entry)
		}
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			return nil, fmt.Errorf("%q has no directory id", entry)
		}
		dirID, err := uuid.Parse(rest[i+1:])
		if err != nil {
			return nil, fmt.Errorf("%q: directory id: %v", entry, err)
		}
		host, port, err := splitHostPort(rest[:i])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", entry, err)
		}
		if slices.ContainsFunc(out, func(v initialVoter) bool { return v.id == int32(n) }) {
			return nil, fmt.Errorf("node %d is listed twice", n)
		}
		out = append(out, initialVoter{id: int32(n), host: host, port: port, dirID: dirID, listener: listener})
	}
	return out, nil
}

func splitHostPort(s string) (string, uint16, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return "", 0, errors.New("want host:port")
	}
	port, err := strconv.ParseUint(s[i+1:], 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q", s[i+1:])
	}
	return strings.Trim(s[:i], "[]"), uint16(port), nil
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
