// Command kraftd is a KRaft controller node that speaks Apache Kafka's wire
// protocol and keeps Apache Kafka's on-disk formats. Its subcommands mirror
// the Apache tools an operator knows: format (kafka-storage.sh format),
// start (kafka-server-start.sh with a controller's server.properties),
// dump-log (kafka-dump-log.sh --cluster-metadata-decoder) and random-uuid.
//
// This package is thin: it parses flags and files, validates them, builds
// the pieces and runs them. It holds no logic of its own.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

func main() {
	app := &cli.App{
		Name:  "kraftd",
		Usage: "a KRaft controller compatible with Apache Kafka",
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
			clusterCommand(),
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
				fmt.Fprintln(os.Stderr, "kraftd:", err)
				os.Exit(exitCode(err))
			}
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "kraftd:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is 1 for every failure, except a usage error which is 2.
func exitCode(err error) int {
	if ec, ok := err.(cli.ExitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}

func newLogger(c *cli.Context) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(strings.ToLower(c.String("log-level")))
	if err != nil {
		return zerolog.Logger{}, cli.Exit(fmt.Sprintf("--log-level: %v", err), 2)
	}
	// Milliseconds, as Apache's log4j layout prints them: an election or a
	// failover is over within a second, and its lines must tell apart.
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
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
