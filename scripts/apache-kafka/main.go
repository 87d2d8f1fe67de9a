// Command apache-kafka fetches and runs the Apache Kafka releases kraftd is
// proven against, for `make kafka` and for people at a terminal; the kit
// package and the compat harness do the same from Go.
//
//	go run ./scripts/apache-kafka fetch [version...]   # every pinned release, or those named
//	go run ./scripts/apache-kafka versions             # the pinned versions, one a line
//	go run ./scripts/apache-kafka run [-production] [-heap 4g] <version> <main-class> [args...]
//
// fetch is kit.FetchKafka for each version: Maven fetches the jars into
// $KRAFTD_KAFKA_CACHE (~/.cache/kraftd/kafka) unless they are there. run
// replaces itself with the JVM the harness would start (package
// internal/apachekafka), with the quick-start profile unless -production;
// $KAFKA_OPTS adds JVM options.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kraftd/kraftd/internal/apachekafka"
	"github.com/kraftd/kraftd/kit"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "fetch":
		err = fetch(args)
	case "versions":
		fmt.Println(strings.Join(kit.Versions, "\n"))
	case "run":
		err = run(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "apache-kafka:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: apache-kafka fetch [version...] | versions | run [-production] [-heap SIZE] <version> <main-class> [args...]")
	os.Exit(2)
}

func fetch(versions []string) error {
	if len(versions) == 0 {
		versions = kit.Versions
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cache, err := kit.CacheDir()
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	for _, v := range versions {
		if apachekafka.Complete(filepath.Join(cache, v)) {
			fmt.Printf("Apache Kafka %s already in %s\n", v, filepath.Join(cache, v))
			continue
		}
		if _, err := kit.FetchKafka(ctx, v, logf); err != nil {
			return err
		}
	}
	return nil
}

func run(args []string) error {
	flags := flag.NewFlagSet("run", flag.ExitOnError)
	production := flags.Bool("production", false, "the production JVM profile (G1, the full JIT) instead of the quick-start one")
	heap := flags.String("heap", "", "the -Xmx value (default 512m for kafka.Kafka, 256m for a tool)")
	flags.Parse(args)
	if flags.NArg() < 2 {
		usage()
	}
	version, mainClass := flags.Arg(0), flags.Arg(1)
	cache, err := kit.CacheDir()
	if err != nil {
		return err
	}
	dir := filepath.Join(cache, version)
	if !apachekafka.Complete(dir) {
		return fmt.Errorf("Apache Kafka %s is not in %s: run make kafka (scripts/fetch-kafka.sh %s)", version, cache, version)
	}
	jvm := apachekafka.JVM{Heap: *heap, Options: strings.Fields(os.Getenv("KAFKA_OPTS"))}
	if *production {
		jvm.Profile = apachekafka.Production
	}
	argv, err := jvm.Argv(dir, mainClass, flags.Args()[2:]...)
	if err != nil {
		return err
	}
	// Replaced by the JVM: this process's PID becomes the JVM's.
	return syscall.Exec(argv[0], argv, os.Environ())
}
