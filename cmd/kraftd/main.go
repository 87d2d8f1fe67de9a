// Command kraftd is a KRaft controller node that speaks Apache Kafka's wire
// protocol and keeps Apache Kafka's on-disk formats. Its subcommands mirror
// the Apache tools an operator knows: format (kafka-storage.sh format),
// start (kafka-server-start.sh with a controller's server.properties),
// dump-log (kafka-dump-log.sh --cluster-metadata-decoder), metadata-shell
// (kafka-metadata-shell.sh) and random-uuid; status asks every controller
// of a quorum and diagnoses it;
// recover makes a stopped controller the only voter of a quorum that lost
// its majority (package recovery);
// image is the container image's entry point, configured as the
// apache/kafka image is (KAFKA_* variables, CLUSTER_ID); cluster runs a
// local cluster of kraftd controllers and Apache brokers (package kit).
// It also prints its version (version, --version) and a bash completion
// script (completion bash).
//
// Exit codes follow one rule (docs/operations.md, "Logs and exit codes"):
// 0 for success, 2 for a usage or configuration error (a bad flag or
// command, a missing or invalid properties file or override, a store that
// does not load, a listener that cannot be bound, a mistake refused at
// format or start such as directories of two clusters), 1 for a failure at run
// time (a directory not formatted or damaged, a node that stops on error);
// `cluster status` alone adds 3 for a cluster that is not running, as an
// init script's status does.
//
// Each command parses its flags and files and calls the package that owns
// the work: format (bootstrap records, SCRAM credentials, the initial
// voter set, formatting a directory), storage (directories and their
// lock), server (the configuration), embed (the node, and format's
// question to other controllers), metrics, recovery, kit (cluster) and
// internal/health (status). What stays here is what only a command
// line has: flag rules, the wording of reports and refusals, and exit
// codes. One command keeps logic of its own that nothing else runs: the
// metadata shell's read-only replay of a directory (metadata_shell.go).
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

func main() {
	// --version alone: -v is too easily taken for "verbose".
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit"}
	cli.VersionPrinter = func(*cli.Context) { fmt.Print(versionText()) }
	app := &cli.App{
		Name:    "kraftd",
		Usage:   "a KRaft controller compatible with Apache Kafka",
		Version: readBuildVersion().Version,
		// Completion asks the binary itself (--generate-bash-completion),
		// so it always knows the commands and flags of the kraftd it runs.
		EnableBashCompletion: true,
		OnUsageError:         usageError,
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(os.Stderr, "kraftd: no command %q; kraftd --help lists them\n", name)
			os.Exit(2)
		},
		// A repeated flag appends one whole value, as Apache's tools do:
		// --add-scram values hold commas of their own.
		DisableSliceFlagSeparator: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "trace, debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "auto (console on a terminal, JSON otherwise), console or json"},
		},
		Commands: []*cli.Command{
			formatCommand(),
			startCommand(),
			dumpLogCommand(),
			metadataShellCommand(),
			statusCommand(),
			recoverCommand(),
			clusterCommand(),
			versionCommand(),
			completionCommand(),
			imageCommand(),
			{
				Name:  "random-uuid",
				Usage: "print a random cluster or directory id, like kafka-storage.sh random-uuid",
				Action: func(*cli.Context) error {
					fmt.Println(randomUUID())
					return nil
				},
			},
		},
		ExitErrHandler: func(c *cli.Context, err error) {
			if err != nil {
				if err.Error() != "" { // status has said all before its exit code
					fmt.Fprintln(os.Stderr, "kraftd:", err)
				}
				os.Exit(exitCode(err))
			}
		},
	}
	for _, cmd := range app.Commands {
		setUsageError(cmd)
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "kraftd:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is the code an error exits with: an ExitCoder's own (2 for a
// configuration error, by this package's rule), 2 for urfave/cli's own
// complaint about a missing required flag, else 1, a failure at run time.
func exitCode(err error) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	// urfave/cli reports a missing required flag with an unexported type,
	// so its message is all there is to know it by.
	if strings.HasPrefix(err.Error(), "Required flag") {
		return 2
	}
	return 1
}

// usageError makes a flag urfave/cli cannot parse a usage error, exit 2.
func usageError(_ *cli.Context, err error, _ bool) error { return cli.Exit(err.Error(), 2) }

func setUsageError(cmd *cli.Command) {
	cmd.OnUsageError = usageError
	for _, sub := range cmd.Subcommands {
		setUsageError(sub)
	}
}

func newLogger(c *cli.Context) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(strings.ToLower(c.String("log-level")))
	if err != nil {
		return zerolog.Logger{}, cli.Exit(fmt.Sprintf("--log-level: %v", err), 2)
	}
	// Milliseconds, as Apache's log4j layout prints them: an election or a
	// failover is over within a second, and its lines must tell apart.
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	// Every duration field is named *_ms (TestLogFieldNames), so its
	// number must be milliseconds; fractions keep sub-millisecond fsyncs.
	zerolog.DurationFieldUnit = time.Millisecond
	zerolog.DurationFieldInteger = false
	var log zerolog.Logger
	switch format := c.String("log-format"); {
	case format == "json" || format == "auto" && !isatty.IsTerminal(os.Stderr.Fd()):
		log = zerolog.New(os.Stderr)
	case format == "console" || format == "auto":
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.RFC3339Nano})
	default:
		return zerolog.Logger{}, cli.Exit(fmt.Sprintf("--log-format: unknown format %q", format), 2)
	}
	// The level is zerolog's global one, which a BROKER_LOGGER change of
	// "root" moves at run time (server/broker_logger.go); the logger
	// itself lets everything through to it.
	zerolog.SetGlobalLevel(level)
	return log.Level(zerolog.TraceLevel).With().Timestamp().Logger(), nil
}
