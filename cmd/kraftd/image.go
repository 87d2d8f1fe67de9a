package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/internal/imageenv"
	"github.com/kraftd/kraftd/storage"
)

// apacheDefaultClusterID is the CLUSTER_ID the apache/kafka image uses when
// none is given; a drop-in image takes the same.
const apacheDefaultClusterID = "5L6g3nShT-eMCtK--X86sw"

// imageDefaultProperties is the configuration when neither a mounted
// server.properties nor a KAFKA_* variable gives one: a single controller
// that forms its own quorum, as the apache/kafka image runs a single node.
const imageDefaultProperties = `# kraftd image default: one controller, its own quorum.
process.roles=controller
node.id=1
listeners=CONTROLLER://:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT
controller.quorum.voters=1@localhost:9093
log.dirs=/var/lib/kafka/data
kraftd.metrics.listener=http://0.0.0.0:9404
`

func imageCommand() *cli.Command {
	return &cli.Command{
		Name:  "image",
		Usage: "the container image's entry point: configure from KAFKA_* variables as the apache/kafka image does, format once, then start",
		Description: "Arguments NAME=value set environment variables first, as the apache/kafka image's run script takes them.\n" +
			"The configuration is server.properties from --mounted-config-dir with the KAFKA_* variables after it\n" +
			"(KAFKA_ stripped, lowercased, ___ to -, __ to _, _ to .), written to --final-config. An unformatted\n" +
			"data directory is formatted with CLUSTER_ID once; a formatted one is never formatted again.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mounted-config-dir", Value: "/mnt/shared/config", Usage: "where an operator mounts server.properties"},
			&cli.StringFlag{Name: "final-config", Value: "/opt/kraftd/config/server.properties", Usage: "where the merged configuration is written"},
			&cli.StringFlag{Name: "data-dir", Value: "/var/lib/kafka/data", Usage: "log.dirs when the configuration names no directory"},
		},
		Action: runImage,
	}
}

func runImage(c *cli.Context) error {
	for _, kv := range c.Args().Slice() {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return cli.Exit(fmt.Sprintf("argument %q: want NAME=value", kv), 2)
		}
		os.Setenv(name, value)
	}
	// Apache's image refuses this on a controller rather than ignore it.
	if os.Getenv("KAFKA_ADVERTISED_LISTENERS") != "" {
		return cli.Exit("KAFKA_ADVERTISED_LISTENERS is not supported on a KRaft controller", 2)
	}
	clusterID := os.Getenv("CLUSTER_ID")
	if clusterID == "" {
		clusterID = apacheDefaultClusterID
		fmt.Fprintf(os.Stderr, "kraftd image: CLUSTER_ID not set, using the apache/kafka image's default %q\n", clusterID)
	}
	final := c.String("final-config")
	if err := writeImageConfig(c.String("mounted-config-dir"), final, c.String("data-dir")); err != nil {
		return err
	}
	cfg, err := loadConfig(final, nil, nil)
	if err != nil {
		return err
	}
	global := imageGlobalFlags(c)
	if formatted(cfg.MetadataLogDir) {
		fmt.Fprintf(os.Stderr, "kraftd image: %s is formatted; not formatting it again\n", cfg.MetadataLogDir)
	} else {
		args := append(append([]string{c.App.Name}, global...), "format", "-c", final, "-t", clusterID)
		args = append(args, imageQuorumFlags(len(cfg.Voters) > 0)...)
		// Run in this process: a failure exits with format's own code.
		if err := c.App.Run(args); err != nil {
			return err
		}
	}
	// start runs in this process too, so that it is the container's PID 1
	// and takes the runtime's SIGTERM itself (it resigns, then stops).
	return c.App.Run(append(append([]string{c.App.Name}, global...), "start", "-c", final))
}

// writeImageConfig writes the merged configuration; when it names no data
// directory, the image's volume is log.dirs.
func writeImageConfig(mountedDir, final, dataDir string) error {
	mounted, err := os.ReadFile(filepath.Join(mountedDir, "server.properties"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return cli.Exit(fmt.Sprintf("mounted configuration: %v", err), 2)
	}
	merged := imageenv.Merge(mounted, os.Environ(), []byte(imageDefaultProperties))
	props := storage.ParseJavaProperties(string(merged))
	if props["log.dirs"] == "" && props["log.dir"] == "" && props["metadata.log.dir"] == "" {
		merged = append([]byte("log.dirs="+dataDir+"\n"), merged...)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return cli.Exit(fmt.Sprintf("--final-config: %v", err), 2)
	}
	if err := os.WriteFile(final, merged, 0o644); err != nil {
		return cli.Exit(fmt.Sprintf("--final-config: %v", err), 2)
	}
	return nil
}

// formatted says whether dir holds a meta.properties: such a directory is
// never formatted again, whatever CLUSTER_ID says now.
func formatted(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "meta.properties"))
	return err == nil
}

// imageQuorumFlags are format's quorum flags. A static quorum
// (controller.quorum.voters) takes none; a dynamic one is described by
// KRAFTD_INITIAL_CONTROLLERS or KRAFTD_STANDALONE=true, and without them
// the node joins an existing quorum later.
func imageQuorumFlags(static bool) []string {
	switch {
	case static:
		return nil
	case os.Getenv("KRAFTD_INITIAL_CONTROLLERS") != "":
		return []string{"--initial-controllers", os.Getenv("KRAFTD_INITIAL_CONTROLLERS")}
	case os.Getenv("KRAFTD_STANDALONE") == "true":
		return []string{"--standalone"}
	}
	return []string{"--no-initial-controllers"}
}

// imageGlobalFlags carries the global flags into format and start;
// KAFKA_LOG4J_ROOT_LOGLEVEL, the image's log level variable, sets the level.
func imageGlobalFlags(c *cli.Context) []string {
	level := c.String("log-level")
	if v := strings.ToLower(strings.TrimSpace(os.Getenv("KAFKA_LOG4J_ROOT_LOGLEVEL"))); v != "" {
		level = map[string]string{"fatal": "error", "off": "error", "all": "trace"}[v]
		if level == "" {
			level = v
		}
	}
	return []string{"--log-level", level, "--log-format", c.String("log-format")}
}
