package quorum_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tiny datadriven runner in the style of cockroachdb/datadriven: a file is
// a list of stanzas
//
//	command arg key=value ...
//	----
//	expected output
//	<blank line>
//
// Lines starting with # between stanzas are comments. With -rewrite the
// files are rewritten with the actual output.

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
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			if i < len(lines)-1 || line != "" {
				out.WriteString(line + "\n")
			}
			continue
		}
		fields := strings.Fields(line)
		c := testCmd{line: line, name: fields[0], args: fields[1:], pos: fmt.Sprintf("%s:%d", filepath.Base(path), i+1)}
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s: expected ---- after command", c.pos)
		}
		var want []string
		for i+1 < len(lines) && lines[i+1] != "" {
			i++
			want = append(want, lines[i])
		}
		got := strings.TrimRight(run(t, c), "\n")
		if got == "" {
			got = "ok"
		}
		if !*rewrite && got != strings.Join(want, "\n") {
			t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", c.pos, line, got, strings.Join(want, "\n"))
		}
		out.WriteString(line + "\n----\n" + got + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
