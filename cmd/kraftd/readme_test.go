package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeMaxBytes bounds the README: it is for users, and the rest lives in
// docs/ (issue 30).
const readmeMaxBytes = 12000

// TestReadmeCommands holds README.md to what a new user can run from a
// clean clone: at most 12,000 bytes, every link to docs/ names a page that
// exists, and every command in its shell blocks is a make target of the
// Makefile, a binary `make build` writes and whose subcommand and flags
// `--help` lists, a script or Go program of the repository, a shell
// builtin, or podman. The Apache main classes it runs are looked up in the fetched
// jars when $KRAFTD_KAFKA_CACHE holds them (make test exports it).
func TestReadmeCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(readme) > readmeMaxBytes {
		t.Errorf("README.md is %d bytes, over %d: move detail into docs/", len(readme), readmeMaxBytes)
	}
	for _, m := range regexp.MustCompile(`\]\((docs/[^)#]+)`).FindAllStringSubmatch(string(readme), -1) {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("README.md links to %s: %v", m[1], err)
		}
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	c := &readmeChecker{t: t, root: root, makefile: string(makefile)}
	commands := shellCommands(string(readme))
	if len(commands) == 0 {
		t.Fatal("README.md has no shell commands")
	}
	for _, cmd := range commands {
		c.check(cmd)
	}
}

// shellCommands splits the README's sh blocks into simple commands: lines
// without their comments, cut at pipes, `;` and `&&`, the loop keywords
// dropped, and the command inside a `$(...)` taken out of its assignment.
func shellCommands(readme string) []string {
	var out []string
	inShell, inBlock := false, false
	for _, line := range strings.Split(readme, "\n") {
		if fence, ok := strings.CutPrefix(line, "```"); ok {
			if inBlock {
				inBlock, inShell = false, false
			} else {
				inBlock = true
				inShell = slices.Contains([]string{"", "sh", "bash", "shell", "console"}, strings.TrimSpace(fence))
			}
			continue
		}
		if !inShell {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		for _, part := range regexp.MustCompile(`\|\||&&|;|\|`).Split(line, -1) {
			part = strings.TrimSpace(part)
			part = strings.TrimSpace(strings.TrimPrefix(part, "do "))
			if m := regexp.MustCompile(`^\w+=\$\((.*)\)$`).FindStringSubmatch(part); m != nil {
				part = m[1]
			}
			if part == "" || part == "done" || strings.HasPrefix(part, "for ") {
				continue
			}
			out = append(out, part)
		}
	}
	return out
}

type readmeChecker struct {
	t        *testing.T
	root     string
	makefile string
}

func (c *readmeChecker) check(cmd string) {
	t := c.t
	words := strings.Fields(cmd)
	switch name := words[0]; {
	case name == "make":
		for _, target := range words[1:] {
			if !strings.Contains(target, "=") && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(target)+`:`).MatchString(c.makefile) {
				t.Errorf("README runs %q: the Makefile has no target %q", cmd, target)
			}
		}
	case name == "echo" || name == "cd" || name == "export":
	case name == "podman":
		// The container engine is the user's; the image it loads is
		// make image's, which the Makefile check above covers.
	case name == "bin/kraftd":
		c.checkKraftd(cmd, words[1:])
	case name == "go" && len(words) > 2 && words[1] == "run":
		if _, err := os.Stat(filepath.Join(c.root, words[2], "main.go")); err != nil {
			t.Errorf("README runs %q: %v", cmd, err)
		}
	case strings.HasPrefix(name, "scripts/"):
		info, err := os.Stat(filepath.Join(c.root, name))
		if err != nil || info.Mode()&0o111 == 0 {
			t.Errorf("README runs %q: %s is not an executable script of the repository (%v)", cmd, name, err)
		}
		if name == "scripts/kafka-run.sh" && len(words) > 2 {
			c.checkMainClass(cmd, words[1], words[2])
		}
	default:
		t.Errorf("README runs %q: %s is no make target, no file make build writes, no script of the repository and no shell builtin", cmd, name)
	}
}

// checkKraftd runs the subcommand's --help, as built, and wants every
// flag the README gives it listed there.
func (c *readmeChecker) checkKraftd(cmd string, args []string) {
	t := c.t
	if !strings.Contains(c.makefile, "-o bin/kraftd ") {
		t.Errorf("README runs %q, but make build does not write bin/kraftd", cmd)
	}
	var sub []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		sub = append(sub, a)
	}
	help, code := run(t, kraftdBinary(t), append(sub, "--help")...)
	if code != 0 || (len(sub) > 0 && !strings.Contains(help, "kraftd "+strings.Join(sub, " "))) {
		t.Errorf("README runs %q: kraftd has no command %q (exit %d):\n%s", cmd, strings.Join(sub, " "), code, help)
		return
	}
	for _, a := range args[len(sub):] {
		if flag, ok := strings.CutPrefix(a, "--"); ok {
			flag, _, _ = strings.Cut(flag, "=")
			if !strings.Contains(help, "--"+flag+" ") && !strings.Contains(help, "--"+flag+",") {
				t.Errorf("README runs %q: kraftd %s has no flag --%s:\n%s", cmd, strings.Join(sub, " "), flag, help)
			}
		}
	}
}

// checkMainClass looks the Apache main class up in the release's jars.
func (c *readmeChecker) checkMainClass(cmd, version, class string) {
	cache := os.Getenv("KRAFTD_KAFKA_CACHE")
	jars, _ := filepath.Glob(filepath.Join(cache, version, "libs", "*.jar"))
	if cache == "" || len(jars) == 0 {
		c.t.Logf("Apache Kafka %s is not fetched ($KRAFTD_KAFKA_CACHE), so %s is not looked up", version, class)
		return
	}
	file := strings.ReplaceAll(class, ".", "/") + ".class"
	for _, jar := range jars {
		z, err := zip.OpenReader(jar)
		if err != nil {
			c.t.Fatalf("%s: %v", jar, err)
		}
		_, err = z.Open(file)
		z.Close()
		if err == nil {
			return
		}
	}
	c.t.Errorf("README runs %q: Apache Kafka %s has no class %s", cmd, version, class)
}
