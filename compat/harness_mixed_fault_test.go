package compat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kraftd/kraftd/internal/supervisor"
)

// TestEndedOnRemovalFault: only an Apache controller whose current run
// (the log after its last "=== start") met Apache's removal race counts;
// a restarted one, a run that failed otherwise, and kraftd never do.
func TestEndedOnRemovalFault(t *testing.T) {
	fault := "ERROR Encountered fatal fault: Unexpected error in raft IO thread\njava.lang.IllegalArgumentException: " + apacheRemovalFault + " 2\n"
	for _, tc := range []struct {
		name, log string
		apache    bool
		want      bool
	}{
		{"faulted", "=== start [java] at 1\nINFO up\n" + fault, true, true},
		{"restarted since", "=== start [java] at 1\n" + fault + "=== start [java] at 2\nINFO up\n", true, false},
		{"faulted again", "=== start [java] at 1\n" + fault + "=== start [java] at 2\n" + fault, true, true},
		{"another fault", "=== start [java] at 1\nERROR Encountered fatal fault: disk\n", true, false},
		{"kraftd", "=== start [kraftd] at 1\n" + fault, false, false},
	} {
		path := filepath.Join(t.TempDir(), "out.log")
		if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &Process{Process: supervisor.Process{Log: path}}
		m := &MixedMember{ID: 3, Kind: KindKraftd, proc: p}
		if tc.apache {
			m.Kind, m.Apache, m.proc = KindApache, &ApacheNode{Proc: p}, nil
		}
		if got := m.endedOnRemovalFault(); got != tc.want {
			t.Errorf("%s: endedOnRemovalFault = %v, want %v", tc.name, got, tc.want)
		}
	}
}
