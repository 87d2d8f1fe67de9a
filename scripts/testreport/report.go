package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string // build-output and build-fail name the package here
	FailedBuild string
}

// headLines and tailLines are how many of a failing test's first and last
// output lines the console shows (the log file keeps them all): a race
// report or a panic says what matters first, a failed check last, before
// the process logs the harness dumps.
const (
	headLines = 20
	tailLines = 40
)

// report follows the stream; the tests' output is kept only until each
// test ends, so memory grows with the tests running at once, not the run.
type report struct {
	console, full io.Writer

	output   map[string][]string // package + test: its output so far
	ranked   []finished          // every top-level test and first subtest that ended
	packages []finished          // every package that ended
	failures []failure
	counts   map[string]int           // pass, fail, skip of top-level tests
	waited   map[string]time.Duration // package + top-level test: its JVM-slot waits
}

type finished struct {
	pkg, name, action string
	elapsed, waited   time.Duration
}

type failure struct {
	pkg, name string
	last      []string
}

func newReport(console, full io.Writer) *report {
	return &report{console: console, full: full, output: map[string][]string{}, counts: map[string]int{}, waited: map[string]time.Duration{}}
}

// read consumes the stream. Lines that are not events (a vet or build
// message printed before test2json starts) are passed through as they are.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(r.console, "%s\n", line)
			fmt.Fprintf(r.full, "%s\n", line)
			continue
		}
		r.handle(e)
	}
	return sc.Err()
}

func (r *report) handle(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.console, e.Output)
		fmt.Fprint(r.full, e.Output)
		return
	case "build-fail":
		r.failures = append(r.failures, failure{pkg: e.ImportPath, name: "(build)"})
		return
	}
	key := e.Package + " " + e.Test
	if e.Output != "" {
		fmt.Fprint(r.full, e.Output)
		r.output[key] = append(r.output[key], strings.TrimRight(e.Output, "\n"))
		if d, ok := slotWait(e.Output); ok {
			parts := strings.SplitN(e.Test, "/", 3)
			r.waited[e.Package+" "+parts[0]] += d
			if len(parts) > 1 {
				r.waited[e.Package+" "+parts[0]+"/"+parts[1]] += d
			}
		}
	}
	if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
		return
	}
	out := r.output[key]
	delete(r.output, key)
	f := finished{pkg: e.Package, name: e.Test, action: e.Action, elapsed: time.Duration(e.Elapsed * float64(time.Second))}
	switch {
	case e.Test == "":
		r.packageEnded(f, out)
	default:
		// Top-level tests and their first subtests (a version, a case)
		// are ranked: a parent of parallel subtests ends before they run.
		if depth := strings.Count(e.Test, "/"); depth <= 1 {
			f.waited = r.waited[key]
			delete(r.waited, key)
			r.ranked = append(r.ranked, f)
			if depth == 0 {
				r.counts[e.Action]++
			}
		}
		if e.Action == "fail" {
			r.testFailed(f, out)
		}
	}
}

func (r *report) packageEnded(f finished, out []string) {
	r.packages = append(r.packages, f)
	if f.action == "skip" {
		fmt.Fprintf(r.console, "?   \t%s\t[no test files]\n", f.pkg)
		return
	}
	word := "ok  "
	if f.action == "fail" {
		word = "FAIL"
		// A package that failed outside any test (a panic, a timeout, a
		// TestMain error) says why only in its own output.
		if !r.hasFailure(f.pkg) {
			r.testFailed(f, out)
		}
	}
	fmt.Fprintf(r.console, "%s\t%s\t%.1fs\n", word, f.pkg, f.elapsed.Seconds())
}

func (r *report) hasFailure(pkg string) bool {
	for _, f := range r.failures {
		if f.pkg == pkg {
			return true
		}
	}
	return false
}

func (r *report) testFailed(f finished, out []string) {
	name := f.name
	if name == "" {
		name = "(package)"
	}
	fmt.Fprintf(r.console, "--- FAIL: %s %s (%.1fs), %d lines of output:\n", f.pkg, name, f.elapsed.Seconds(), len(out))
	for _, line := range headAndTail(out) {
		fmt.Fprintf(r.console, "    %s\n", cut(line, 300))
	}
	r.failures = append(r.failures, failure{pkg: f.pkg, name: name, last: lastLogLines(out, 4)})
}

// headAndTail is out, or its first headLines and last tailLines with a
// line that says how many were left out between.
func headAndTail(out []string) []string {
	if len(out) <= headLines+tailLines {
		return out
	}
	cut := fmt.Sprintf("… %d lines (bin/test-output.log has them) …", len(out)-headLines-tailLines)
	return append(append(append([]string(nil), out[:headLines]...), cut), out[len(out)-tailLines:]...)
}

// lastLogLines picks a failing test's own last messages (file.go:N: ...),
// leaving out the process logs the harness dumps after them.
func lastLogLines(out []string, n int) []string {
	var picked []string
	for i := len(out) - 1; i >= 0 && len(picked) < n; i-- {
		line := strings.TrimSpace(out[i])
		if isLogLine(line) && !strings.Contains(line, "harness_process.go:") && !strings.Contains(line, "process.go:") {
			picked = append([]string{cut(line, 300)}, picked...)
		}
	}
	return picked
}

// isLogLine reports whether a line is a t.Log line: "name.go:123: text".
func isLogLine(line string) bool {
	file, rest, ok := strings.Cut(line, ".go:")
	if !ok || file == "" || strings.ContainsAny(file, " \t") {
		return false
	}
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	return digits > 0 && strings.HasPrefix(rest[digits:], ": ")
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (r *report) ok() bool {
	return len(r.failures) == 0 && r.counts["fail"] == 0 && len(r.packages) > 0
}

// summary prints what the run as a whole says about itself.
func (r *report) summary(slowest int) {
	w := r.console
	tests := append([]finished(nil), r.ranked...)
	sort.SliceStable(tests, func(i, j int) bool { return tests[i].elapsed > tests[j].elapsed })
	fmt.Fprintf(w, "\n==== the %d slowest tests and first-level subtests ====\n", min(slowest, len(tests)))
	for _, t := range tests[:min(slowest, len(tests))] {
		waited := ""
		if t.waited > 0 {
			waited = fmt.Sprintf(" (%.0fs of it waiting for JVM slots)", t.waited.Seconds())
		}
		fmt.Fprintf(w, "%8.1fs  %-4s %s %s%s\n", t.elapsed.Seconds(), t.action, short(t.pkg), t.name, waited)
	}
	pkgs := append([]finished(nil), r.packages...)
	sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].elapsed > pkgs[j].elapsed })
	fmt.Fprintf(w, "\n==== each package's time ====\n")
	for _, p := range pkgs {
		if p.action != "skip" {
			fmt.Fprintf(w, "%8.1fs  %-4s %s\n", p.elapsed.Seconds(), p.action, p.pkg)
		}
	}
	if len(r.failures) > 0 {
		fmt.Fprintf(w, "\n==== failure digest: each failing test and the last lines it logged ====\n")
		for _, f := range r.failures {
			fmt.Fprintf(w, "  %s %s\n", f.pkg, f.name)
			for _, line := range f.last {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	if len(r.packages) == 0 {
		fmt.Fprintf(w, "\nno package reported a result\n")
	}
	fmt.Fprintf(w, "\ntests: %d passed, %d failed, %d skipped\n", r.counts["pass"], r.counts["fail"], r.counts["skip"])
}

// short drops the module path from a package name.
func short(pkg string) string {
	if i := strings.LastIndex(pkg, "/kraftd/"); i >= 0 {
		return pkg[i+len("/kraftd/"):]
	}
	return pkg
}

// slotWait reads compat.ReserveJVMs's line "compat: waited 1m2s for 3 JVM
// slots", so that the slowest tests can be told from those that waited.
func slotWait(output string) (time.Duration, bool) {
	_, rest, ok := strings.Cut(output, "compat: waited ")
	if !ok {
		return 0, false
	}
	word, _, _ := strings.Cut(rest, " ")
	d, err := time.ParseDuration(word)
	return d, err == nil
}
