package kit

import (
	"context"
	"os"
	"testing"
)

// StartT starts a cluster for a test and stops it when the test ends,
// passed, failed or panicked (t.Cleanup). Logf goes to t.Logf unless the
// Spec sets it. It fails the test if the cluster does not start. When the
// test fails, the tail of every node's log is written to the test's log.
func StartT(t testing.TB, spec Spec) *Cluster {
	t.Helper()
	if spec.Logf == nil {
		spec.Logf = t.Logf
	}
	c, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes() {
				t.Logf("---- %s %d: last lines of %s ----\n%s", n.Role, n.ID, n.Log(), logTail(n.Log(), 8<<10))
			}
		}
		c.Stop()
	})
	return c
}

// logTail is the last max bytes of a log file.
func logTail(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(0, st.Size()-limit)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return err.Error()
	}
	return string(b)
}
