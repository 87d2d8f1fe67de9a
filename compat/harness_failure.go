package compat

import (
	"fmt"
	"sync"
	"testing"
)

// A failing test's process logs are written to its output after the
// failure itself, and can run to hundreds of kilobytes; a CI page that
// shows only the end of the output then shows no reason at all. So the
// harness's own fatal checks note their message, and the test's last
// cleanup repeats it below the logs.
var (
	failureNotes   sync.Map // testing.TB -> string: the harness check that failed
	failureRepeats sync.Map // testing.TB -> struct{}: the repeat is registered
)

// failNow is t.Fatalf that the test's end repeats below its process logs.
func failNow(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	failureNotes.Store(t, msg)
	t.Fatal(msg)
}

// repeatFailureLast registers, once per test and before its first process's
// cleanup (so it runs after every dump), a line that names why the test
// failed.
func repeatFailureLast(t testing.TB) {
	if _, registered := failureRepeats.LoadOrStore(t, struct{}{}); registered {
		return
	}
	t.Cleanup(func() {
		note, noted := failureNotes.LoadAndDelete(t)
		failureRepeats.Delete(t)
		switch {
		case noted:
			t.Logf("---- %s failed: %s ----", t.Name(), note)
		case t.Failed():
			t.Logf("---- %s failed: see its first error above the process logs ----", t.Name())
		}
	})
}
