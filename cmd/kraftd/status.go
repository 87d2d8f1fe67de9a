package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/internal/health"
	"github.com/kraftd/kraftd/server"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "ask every controller of a quorum, each itself, and diagnose it: exit 0 healthy, 1 degraded, 2 down",
		Description: "Asks each controller over the Kafka protocol (ApiVersions, DescribeCluster, a Fetch it refuses with its epoch and leader, " +
			"DescribeQuorum at the leader), in parallel, and works without a leader. It prints a line per controller and a diagnosis, " +
			"and exits 0 when healthy, 1 when degraded (a voter down, lagging or of another cluster), 2 when down (no leader, or no majority of " +
			"voters reachable). Brokers are counted from a controller's metrics listener (kraftd.metrics.listener) when --metrics names it.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-controller", Usage: "host:port of the controllers, comma-separated (one is enough when the others' endpoints are known to it)"},
			&cli.StringFlag{Name: "config", Usage: "a controller's or broker's properties file: ask the controllers of controller.quorum.voters " +
				"(or controller.quorum.bootstrap.servers), with a controller file's own controller-listener TLS and SASL settings"},
			&cli.StringFlag{Name: "command-config", Usage: "a file of Apache client properties for a secured controller listener " +
				"(security.protocol SSL, SASL_PLAINTEXT or SASL_SSL; ssl.truststore.*, ssl.keystore.* for a client certificate, " +
				"ssl.endpoint.identification.algorithm; sasl.mechanism PLAIN or SCRAM-SHA-256/512 with sasl.jaas.config), as kafka-metadata-quorum.sh reads"},
			&cli.StringFlag{Name: "metrics", Usage: "http://host:port of kraftd controllers' kraftd.metrics.listener, comma-separated: " +
				"to count brokers, and for each node's own role (candidate, unattached, ...) and how long ago it heard from a leader"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "how long each controller has to answer"},
			&cli.Int64Flag{Name: "max-lag", Value: 10000, Usage: "records a voter may be behind before it counts as lagging"},
			&cli.DurationFlag{Name: "max-fetch-age", Value: 5 * time.Second, Usage: "how long ago a voter may have last fetched before it counts as lagging"},
		},
		Action: runStatus,
	}
}

func runStatus(c *cli.Context) error {
	targets, static, sec, err := statusTargets(c)
	if err != nil {
		return cli.Exit(fmt.Sprintf("kraftd status: %v", err), 2)
	}
	r := health.Ask(c.Context, targets, static, health.Options{Security: sec, Timeout: c.Duration("timeout"),
		Limits:      health.Limits{MaxLag: c.Int64("max-lag"), MaxFetchAge: c.Duration("max-fetch-age")},
		MetricsURLs: commaList(c.String("metrics"))})
	if c.Bool("json") {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		health.WriteText(os.Stdout, r)
	}
	if code := r.Diagnosis.ExitCode; code != 0 {
		return cli.Exit("", code)
	}
	return nil
}

// statusTargets reads the controllers to ask and how to connect: from
// --bootstrap-controller, else --config; --command-config overrides a
// controller file's own security. static says the targets are the whole
// voter set (controller.quorum.voters).
func statusTargets(c *cli.Context) (targets []health.Target, static bool, sec *server.ClientSecurity, err error) {
	list, file := c.String("bootstrap-controller"), c.String("config")
	switch {
	case list == "" && file == "":
		return nil, false, nil, fmt.Errorf("--bootstrap-controller or --config is required")
	case list != "" && file != "":
		return nil, false, nil, fmt.Errorf("--bootstrap-controller and --config are exclusive: give one")
	}
	sec = &server.ClientSecurity{Protocol: "PLAINTEXT"}
	if list != "" {
		for _, a := range commaList(list) {
			targets = append(targets, health.Target{ID: -1, Addr: a})
		}
	} else if targets, static, sec, err = configTargets(file, c.String("command-config") == ""); err != nil {
		return nil, false, nil, fmt.Errorf("--config %s: %w", file, err)
	}
	if path := c.String("command-config"); path != "" {
		if sec, err = clientSecurity(path); err != nil {
			return nil, false, nil, fmt.Errorf("--command-config %s: %w", path, err)
		}
	}
	return targets, static, sec, nil
}

func commaList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// configTargets reads a properties file's controllers and, from a
// controller's file when withSecurity, its controller listener's client
// security (--command-config, when given, replaces it: the rest of the
// file is then not read, so that nothing else in it can stop the command).
func configTargets(path string, withSecurity bool) ([]health.Target, bool, *server.ClientSecurity, error) {
	props, err := readProperties(path)
	if err != nil {
		return nil, false, nil, err
	}
	ids, addrs, err := server.QuorumTargets(props)
	if err != nil {
		return nil, false, nil, err
	}
	var targets []health.Target
	for i := range ids {
		targets = append(targets, health.Target{ID: ids[i], Addr: addrs[i]})
	}
	static := ids[0] >= 0
	sec := &server.ClientSecurity{Protocol: "PLAINTEXT"}
	if withSecurity && strings.TrimSpace(props["process.roles"]) == "controller" {
		cfg, err := server.ParseConfig(props)
		if err != nil {
			return nil, false, nil, err
		}
		if err := cfg.LoadTLS(zerolog.Nop()); err != nil {
			return nil, false, nil, err
		}
		if sec, err = cfg.ControllerClientSecurity(); err != nil {
			return nil, false, nil, err
		}
	}
	return targets, static, sec, nil
}

func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return server.ParseProperties(f)
}

// clientSecurity reads the --command-config file.
func clientSecurity(path string) (*server.ClientSecurity, error) {
	props, err := readProperties(path)
	if err != nil {
		return nil, err
	}
	return server.ParseClientSecurity(props)
}
