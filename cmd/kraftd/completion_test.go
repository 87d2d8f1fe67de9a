package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBashCompletion sources `kraftd completion bash` in a real bash and
// completes command lines with the real binary.
func TestBashCompletion(t *testing.T) {
	bin := kraftdBinary(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed: apt-get install bash")
	}
	script := filepath.Join(t.TempDir(), "kraftd.bash")
	if err := os.WriteFile(script, []byte(mustRun(t, bin, "completion", "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		// COMP_WORDS[0] is the binary itself, as when it is on PATH.
		line := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kraftd; printf '%s\n' "${COMPREPLY[@]}"`
		out, err := exec.Command(bash, append([]string{"-c", line, "bash", script, bin}, words...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", words, err, out)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	if got := complete("st"); got != "start status" {
		t.Errorf("kraftd st<TAB>: %q, want start status", got)
	}
	if got := complete("start", "--ov"); got != "--override" {
		t.Errorf("kraftd start --ov<TAB>: %q, want --override", got)
	}
	if got := complete("ver"); got != "version" {
		t.Errorf("kraftd ver<TAB>: %q, want version", got)
	}
}

// TestLogFieldNames reads every non-test Go file for log fields that break
// the log rules: a duration field not named *_ms (its number has no unit
// otherwise), or a field named like one zerolog writes itself (a second
// "level" made log pipelines file a warning as DEBUG).
func TestLogFieldNames(t *testing.T) {
	dur := regexp.MustCompile(`\.Dur\("([^"]*)"`)
	reserved := regexp.MustCompile(`\.(Str|Int\w*|Uint\w*|Float\w*|Bool|Dur|Stringer|Any|Interface|Strs|Time|Err)\("(level|time|message)"`)
	files := 0
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range dur.FindAllStringSubmatch(string(src), -1) {
			if !strings.HasSuffix(m[1], "_ms") {
				t.Errorf("%s: duration field %q: name it %s_ms", path, m[1], m[1])
			}
		}
		for _, m := range reserved.FindAllString(string(src), -1) {
			t.Errorf("%s: %s: zerolog writes this key itself", path, m)
		}
		return nil
	})
	if err != nil || files < 100 {
		t.Fatalf("walked %d files: %v", files, err)
	}
}
