package controller

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/internal/datadriven"
)

// Controller transcripts: scenario files in testdata/*.txt drive the real
// Core on the test's goroutine, one explicit input per command, and print
// what it proposed and answered (transcript_test.go). The format is
// internal/datadriven's, as the quorum's transcripts: stanzas of
//
//	command arg key=value ...
//	----
//	expected output
//
// separated by blank lines, with # comments between them. -rewrite writes
// the actual output back into the files.

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the actual output")

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			tr := &transcript{t: t}
			runTranscript(t, path, tr.run)
		})
	}
}

// txCmd is one command line: its name, its bare words and its key=value
// arguments.
type txCmd struct {
	line, name, pos string
	fields          []string // the arguments, in line order
	words           []string
	kv              map[string]string
	keys            []string // the keys of kv, in line order
}

func parseCmd(line, pos string) txCmd {
	fields := strings.Fields(line)
	c := txCmd{line: line, name: fields[0], pos: pos, fields: fields[1:], kv: map[string]string{}}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			c.kv[k] = v
			c.keys = append(c.keys, k)
		} else {
			c.words = append(c.words, f)
		}
	}
	return c
}

func (c txCmd) arg(key, def string) string {
	if v, ok := c.kv[key]; ok {
		return v
	}
	return def
}

func (c txCmd) has(word string) bool {
	for _, w := range c.words {
		if w == word {
			return true
		}
	}
	return false
}

func runTranscript(t *testing.T, path string, run func(txCmd) string) {
	datadriven.Run(t, path, *rewrite, func(line, pos string) string { return run(parseCmd(line, pos)) })
}
