// Command testreport reads the event stream of `go test -json` on its
// standard input and turns it into what a person reading CI's output needs:
// one line a package as it ends, the output of each failing test (its end,
// since a failing compat test dumps the logs of its processes), and, once
// the stream ends, the slowest tests, each package's time, a digest of the
// failures and a closing count. The whole verbose output is written to the
// file -log names, for reading after the run.
//
//	go test -json ./... | go run ./scripts/testreport -log bin/test-output.log
//
// It exits 1 when a test or a package failed, or when no package ran.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	logPath := flag.String("log", "", "file for the whole verbose output (none when empty)")
	slowest := flag.Int("slowest", 15, "how many of the slowest tests to list")
	flag.Parse()
	var full io.Writer = io.Discard
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
			os.Exit(2)
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		full = w
	}
	r := newReport(os.Stdout, full)
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
	}
	r.summary(*slowest)
	if !r.ok() {
		os.Exit(1)
	}
}
