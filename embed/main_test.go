package embed

import (
	"os"
	"testing"
)

// TestMain runs the tests, unless BenchmarkBrokerHeartbeatFleet started this
// binary again as its client fleet, so that getrusage in the benchmark
// counts the server's CPU alone.
func TestMain(m *testing.M) {
	if addr := os.Getenv(hbClientEnv); addr != "" {
		heartbeatFleetClient(addr)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
