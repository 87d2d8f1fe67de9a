package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A stream as `go test -json` writes it for two packages: one passing with
// two tests, one failing a test that logs, then dumps process logs.
const stream = `{"Action":"start","Package":"example.com/kraftd/kraftd/a"}
{"Action":"run","Package":"example.com/kraftd/kraftd/a","Test":"TestQuick"}
{"Action":"output","Package":"example.com/kraftd/kraftd/a","Test":"TestQuick","Output":"=== RUN   TestQuick\n"}
{"Action":"pass","Package":"example.com/kraftd/kraftd/a","Test":"TestQuick","Elapsed":0.5}
{"Action":"run","Package":"example.com/kraftd/kraftd/a","Test":"TestSlow"}
{"Action":"run","Package":"example.com/kraftd/kraftd/a","Test":"TestSlow/sub"}
{"Action":"output","Package":"example.com/kraftd/kraftd/a","Test":"TestSlow/sub","Output":"    harness.go:153: compat: waited 1m2s for 3 JVM slots\n"}
{"Action":"pass","Package":"example.com/kraftd/kraftd/a","Test":"TestSlow/sub","Elapsed":70}
{"Action":"pass","Package":"example.com/kraftd/kraftd/a","Test":"TestSlow","Elapsed":71.2}
{"Action":"pass","Package":"example.com/kraftd/kraftd/a","Elapsed":72}
{"Action":"run","Package":"example.com/kraftd/kraftd/b","Test":"TestBroken"}
{"Action":"output","Package":"example.com/kraftd/kraftd/b","Test":"TestBroken","Output":"    broken_test.go:12: leader never elected\n"}
{"Action":"output","Package":"example.com/kraftd/kraftd/b","Test":"TestBroken","Output":"    harness_process.go:200: [2026-12-04] INFO jvm line\n"}
{"Action":"fail","Package":"example.com/kraftd/kraftd/b","Test":"TestBroken","Elapsed":3}
{"Action":"output","Package":"example.com/kraftd/kraftd/b","Output":"FAIL\n"}
{"Action":"fail","Package":"example.com/kraftd/kraftd/b","Elapsed":3.1}
{"Action":"skip","Package":"example.com/kraftd/kraftd/c"}
`

func TestReportSummarises(t *testing.T) {
	var console, full bytes.Buffer
	r := newReport(&console, &full)
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	r.summary(15)
	out := console.String()
	for _, want := range []string{
		"ok  \texample.com/kraftd/kraftd/a\t72.0s\n",
		"FAIL\texample.com/kraftd/kraftd/b\t3.1s\n",
		"?   \texample.com/kraftd/kraftd/c\t[no test files]\n",
		"--- FAIL: example.com/kraftd/kraftd/b TestBroken (3.0s), 2 lines of output:",
		"    71.2s  pass a TestSlow (62s of it waiting for JVM slots)\n    70.0s  pass a TestSlow/sub (62s of it waiting for JVM slots)\n     3.0s  fail b TestBroken\n     0.5s  pass a TestQuick\n",
		"failure digest",
		"      broken_test.go:12: leader never elected\n",
		"\ntests: 2 passed, 1 failed, 0 skipped\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q:\n%s", want, out)
		}
	}

	if strings.Count(out, "INFO jvm line") != 1 {
		t.Errorf("the process dump should show once in the failing test's tail, never in the digest:\n%s", out)
	}
	if !strings.Contains(full.String(), "=== RUN   TestQuick\n") {
		t.Errorf("the log file lacks the verbose output:\n%s", full.String())
	}
	if r.ok() {
		t.Error("a run with a failing test reports ok")
	}
}

func TestReportWithoutPackagesFails(t *testing.T) {
	var console bytes.Buffer
	r := newReport(&console, &bytes.Buffer{})
	if err := r.read(strings.NewReader("go: no packages to test\n")); err != nil {
		t.Fatal(err)
	}
	r.summary(15)
	if r.ok() {
		t.Error("a run in which no package reported reports ok")
	}
	if !strings.Contains(console.String(), "go: no packages to test") {
		t.Errorf("a non-event line was not passed through:\n%s", console.String())
	}
}

func TestHeadAndTailKeepsBothEnds(t *testing.T) {
	var out []string
	for i := range 100 {
		out = append(out, fmt.Sprintf("line %d", i))
	}
	got := headAndTail(out)
	if len(got) != headLines+tailLines+1 || got[0] != "line 0" || got[headLines-1] != "line 19" ||
		!strings.Contains(got[headLines], "40 lines") || got[len(got)-1] != "line 99" {
		t.Errorf("headAndTail of 100 lines: %q", got)
	}
	if short := out[:10]; len(headAndTail(short)) != 10 {
		t.Errorf("a short output was cut: %q", headAndTail(short))
	}
}
