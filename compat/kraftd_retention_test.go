package compat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKraftdStandaloneRestartAfterRetention runs a standalone kraftd that
// snapshots at every commit and keeps no history, so retention deletes the
// bootstrap snapshot `format --standalone` wrote the voter set into; after
// a SIGTERM it must start again from the newer snapshot's voter set, elect
// itself and serve DescribeQuorum (issue 11, defect 3: it used to stop
// with "controller.quorum.voters: is empty and the directory holds no
// initial voter set").
func TestKraftdStandaloneRestartAfterRetention(t *testing.T) {
	t.Parallel()
	port := FreePorts(t, 1)[0]
	dir := filepath.Join(t.TempDir(), "metadata")
	conf := WriteKraftdConfig(t, 1, Addr(port), dir, map[string]string{
		"metadata.log.max.record.bytes.between.snapshots": "1",
		"metadata.max.retention.bytes":                    "1",
		"metadata.max.idle.interval.ms":                   "50", // NoOps to snapshot
	})
	format := NewProcess(t, "kraftd-format", KraftdBinary(t), "format", "--config", conf, "--cluster-id", NewUUID(), "--standalone")
	format.Start()
	if err := format.Wait(time.Minute); err != nil {
		t.Fatalf("format: %v\n%s", err, format.Output())
	}
	proc := StartProcess(t, "kraftd-standalone", KraftdRaceBinary(t), "--log-format", "json", "--log-level", "debug", "start", "--config", conf)
	first := waitSelfLeader(t, proc, port, 0)

	partition := filepath.Join(dir, "__cluster_metadata-0")
	Eventually(t, 20*time.Second, "retention deleting the bootstrap snapshot", proc, func() error {
		names, err := os.ReadDir(partition)
		if err != nil {
			return err
		}
		newer := false
		for _, e := range names {
			switch {
			case e.Name() == "00000000000000000000-0000000000.checkpoint":
				return errors.New("the bootstrap snapshot is still there")
			case strings.HasSuffix(e.Name(), ".checkpoint"):
				newer = true
			}
		}
		if !newer {
			return errors.New("no snapshot yet")
		}
		return nil
	})

	proc.Stop() // SIGTERM
	if _, err := proc.Exited(); err != nil {
		t.Fatalf("kraftd after SIGTERM: %v", err)
	}
	proc.Start()
	waitSelfLeader(t, proc, port, first.LeaderEpoch)
}

// waitSelfLeader waits until the standalone node 1 on port leads an epoch
// above after, with itself the only voter, failing at once if proc exits.
func waitSelfLeader(t *testing.T, proc *Process, port int, after int32) *QuorumStatus {
	t.Helper()
	var got *QuorumStatus
	Eventually(t, ReadyTimeout, "node 1 leading itself", proc, func() (err error) {
		if got, err = DescribeQuorum(Addr(port)); err != nil {
			return err
		}
		if got.LeaderID != 1 || got.LeaderEpoch <= after || len(got.Voters) != 1 || got.Voters[0] != 1 {
			return errorf("leader %d in epoch %d, voters %v; want 1 above epoch %d, voters [1]", got.LeaderID, got.LeaderEpoch, got.Voters, after)
		}
		return nil
	})
	return got
}
