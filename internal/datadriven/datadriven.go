// Package datadriven runs scenario transcripts: files of stanzas
//
//	command arg key=value ...
//	----
//	expected output
//
// separated by blank lines, with # comment lines between them, in the style
// of cockroachdb/datadriven. It owns only the file format (reading stanzas,
// comparing output, rewriting the file); what a command means belongs to
// the package whose tests run it (quorum's consensus, controller's Core).
// It must never know any command.
package datadriven

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Run feeds each command line of the file at path to run, with its
// file:line position, and compares what run returns (empty reads "ok")
// with the stanza's expected output. With rewrite set it writes the actual
// output back into the file instead of failing.
func Run(t testing.TB, path string, rewrite bool, run func(line, pos string) string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		pos := fmt.Sprintf("%s:%d", filepath.Base(path), i+1)
		if i++; i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s: expected ---- after the command", pos)
		}
		var want []string
		for i+1 < len(lines) && lines[i+1] != "" {
			i++
			want = append(want, lines[i])
		}
		got := strings.TrimRight(run(line, pos), "\n")
		if got == "" {
			got = "ok"
		}
		if !rewrite && got != strings.Join(want, "\n") {
			t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", pos, line, got, strings.Join(want, "\n"))
		}
		out.WriteString(line + "\n----\n" + got + "\n")
	}
	if rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
