package quorum_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/internal/datadriven"
)

// The consensus transcripts (testdata/*.txt) are in internal/datadriven's
// format; a command is its first word and the words after it. With -rewrite
// the files are rewritten with the actual output.

var rewrite = flag.Bool("rewrite", false, "rewrite testdata files with actual output")

type testCmd struct {
	line string   // the whole command line
	name string   // first word
	args []string // remaining words
	pos  string   // file:line for messages
}

// arg returns the value of key=value, or def.
func (c testCmd) arg(key, def string) string {
	for _, a := range c.args {
		if k, v, ok := strings.Cut(a, "="); ok && k == key {
			return v
		}
	}
	return def
}

// has reports whether a bare word is among the arguments.
func (c testCmd) has(word string) bool {
	for _, a := range c.args {
		if a == word {
			return true
		}
	}
	return false
}

func runDataDriven(t *testing.T, path string, run func(t *testing.T, c testCmd) string) {
	t.Helper()
	datadriven.Run(t, path, *rewrite, func(line, pos string) string {
		fields := strings.Fields(line)
		return run(t, testCmd{line: line, name: fields[0], args: fields[1:], pos: pos})
	})
}
