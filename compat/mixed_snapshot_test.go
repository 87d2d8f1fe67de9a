package compat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/storage/batch"
)

// snapshotApacheProps make Apache controllers snapshot every few hundred
// milliseconds (a NoOp every 100 ms, a snapshot per 1000 bytes of records),
// roll tiny segments, and keep as little history as they may, so that the
// log start passes a stopped follower at the next log clean (Apache cleans
// the metadata log once a minute, a fixed period in 4.1 and 4.4).
var snapshotApacheProps = map[string]string{
	"metadata.max.idle.interval.ms":                   "100",
	"metadata.log.max.record.bytes.between.snapshots": "1000",
	"internal.metadata.log.segment.bytes":             "4096",
	"metadata.max.retention.bytes":                    "1",
	"metadata.max.retention.ms":                       "1",
}

// A kraftd follower catches up from an Apache leader's snapshot through
// FetchSnapshot: first a kraftd voter that joins with an empty log (the
// leader answers a fetch at offset 0 with its latest snapshot), then the
// same voter after it was down while the leader's log start moved past its
// log end. TestMixedSnapshotFromKraftdLeader checks the reverse direction.
func TestMixedSnapshotCatchUp(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 2)
		at := stamp(t)
		members, _ := NewMixedStaticQuorum(t, MixedOptions{Version: v, Kinds: []string{KindApache, KindApache, KindKraftd}, ApacheProps: snapshotApacheProps})
		apaches, kraftd := members[:2], members[2]
		StartMixed(t, apaches...)
		t.Cleanup(func() { StopMixed(kraftd) })
		cur := WaitMixedLeader(t, apaches, nil)
		leader := MemberByID(members, cur.LeaderID)
		snap := waitSnapshotFile(t, leader, 1)
		at(fmt.Sprintf("%s leads and has snapshot %s", leader, filepath.Base(snap)))

		kraftd.Start(t)
		installed := waitInstalledSnapshots(t, kraftd, 1)
		caughtUp := WaitMixedLeader(t, members, VotersCaughtUp(cur.HighWatermark))
		at(fmt.Sprintf("kraftd, started empty, installed %s and caught up to %d", installed, caughtUp.HighWatermark))
		checkSnapshotCopied(t, MemberByID(members, caughtUp.LeaderID), kraftd, installed)

		kraftd.Kill()
		end := LogEnd(t, kraftd.LogDir())
		leader = MemberByID(members, caughtUp.LeaderID)
		Eventually(t, ReadyTimeout, fmt.Sprintf("%s's log to start past %d", leader, end), leader.Proc(), func() error {
			if first := FirstSegmentBase(t, leader.LogDir()); first <= end {
				return fmt.Errorf("its first segment starts at %d", first)
			}
			return nil
		})
		at(fmt.Sprintf("kraftd down at log end %d; %s's log now starts past it", end, leader))

		kraftd.Start(t)
		installed = waitInstalledSnapshots(t, kraftd, 2)
		final := WaitMixedLeader(t, members, VotersCaughtUp(0))
		final = WaitMixedLeader(t, members, VotersCaughtUp(final.HighWatermark))
		at(fmt.Sprintf("kraftd, restarted behind the log start, installed %s and caught up to %d", installed, final.HighWatermark))
		checkSnapshotCopied(t, MemberByID(members, final.LeaderID), kraftd, installed)
		if out := KraftdDumpLog(t, filepath.Join(kraftd.LogDir(), installed)); strings.Contains(out, "Undecodable") || strings.Contains(out, "UnknownControl") {
			t.Errorf("kraftd dump-log cannot decode every record of Apache's snapshot %s:\n%s", installed, grepLines(out, "Undecodable", 5))
		}
	})
}

// waitSnapshotFile waits until the member's log directory holds at least n
// snapshots besides the bootstrap one and returns the newest's path.
func waitSnapshotFile(t *testing.T, m *MixedMember, n int) string {
	t.Helper()
	var newest string
	Eventually(t, ReadyTimeout, fmt.Sprintf("%d snapshots in %s's log", n, m), m.Proc(), func() error {
		snaps := SnapshotFiles(t, m.LogDir())
		if len(snaps) < n {
			return fmt.Errorf("%d snapshots", len(snaps))
		}
		newest = snaps[len(snaps)-1]
		return nil
	})
	return newest
}

// waitInstalledSnapshots waits until kraftd has logged n snapshot installs
// in total and returns the file name of the last one.
func waitInstalledSnapshots(t *testing.T, m *MixedMember, n int) string {
	t.Helper()
	var name string
	Eventually(t, ReadyTimeout, fmt.Sprintf("%s to install snapshot number %d", m, n), m.Proc(), func() error {
		lines := strings.Split(grepLines(m.Proc().Output(), "installed snapshot from the leader", 1000), "\n")
		if len(lines) < n || lines[0] == "" {
			return fmt.Errorf("%d installs so far", len(lines))
		}
		// The line carries "snapshot":"<endOffset>-<epoch>"; the file
		// name is the same id in Apache's zero-padded form.
		last := lines[len(lines)-1]
		i := strings.Index(last, `"snapshot":"`)
		if i < 0 {
			return fmt.Errorf("no snapshot id in %q", last)
		}
		id := strings.SplitN(last[i+len(`"snapshot":"`):], `"`, 2)[0]
		var end, epoch int64
		if _, err := fmt.Sscanf(id, "%d-%d", &end, &epoch); err != nil {
			return fmt.Errorf("snapshot id %q: %v", id, err)
		}
		name = fmt.Sprintf("%020d-%010d.checkpoint", end, epoch)
		return nil
	})
	return name
}

// checkSnapshotCopied checks kraftd holds the snapshot byte for byte as the
// leader wrote it (when the leader still keeps it) and that its log starts
// at the snapshot's end.
func checkSnapshotCopied(t *testing.T, leader, follower *MixedMember, name string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(follower.LogDir(), name))
	if err != nil {
		t.Fatalf("%s: %v", follower, err)
	}
	if want, err := os.ReadFile(filepath.Join(leader.LogDir(), name)); err == nil && !bytes.Equal(got, want) {
		t.Errorf("%s's copy of snapshot %s (%d bytes) differs from %s's (%d bytes)", follower, name, len(got), leader, len(want))
	}
	var end int64
	fmt.Sscanf(name, "%d-", &end)
	if first := FirstSegmentBase(t, follower.LogDir()); first < end {
		t.Errorf("%s's log starts at %d, below the installed snapshot's end %d", follower, first, end)
	}
}

// snapshotKraftdProps are snapshotApacheProps for kraftd: a NoOp every
// 100 ms, a snapshot per 1000 bytes of committed batches, and retention so
// small that every snapshot drops the log before it.
var snapshotKraftdProps = map[string]string{
	"metadata.max.idle.interval.ms":                   "100",
	"metadata.log.max.record.bytes.between.snapshots": "1000",
	"metadata.max.retention.bytes":                    "1",
	"metadata.max.retention.ms":                       "1",
	"metadata.log.segment.bytes":                      "4096",
}

// The reverse direction: an Apache follower catches up from a kraftd
// leader's snapshot, first joining with an empty log, then after it was
// down while the kraftd leader's log start moved past its log end.
func TestMixedSnapshotFromKraftdLeader(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 1)
		at := stamp(t)
		members, _ := NewMixedStaticQuorum(t, MixedOptions{Version: v, Kinds: []string{KindKraftd, KindKraftd, KindApache},
			KraftdProps: snapshotKraftdProps, ApacheProps: snapshotApacheProps})
		kraftds, apache := members[:2], members[2]
		StartMixed(t, kraftds...)
		t.Cleanup(func() { StopMixed(apache) })
		cur := WaitMixedLeader(t, kraftds, nil)
		leader := MemberByID(members, cur.LeaderID)
		snap := waitSnapshotFile(t, leader, 1)
		at(fmt.Sprintf("%s leads and has snapshot %s", leader, filepath.Base(snap)))
		checkGzipSnapshot(t, v, snap)

		apache.Start(t)
		caughtUp := WaitMixedLeader(t, members, VotersCaughtUp(0))
		caughtUp = WaitMixedLeader(t, members, VotersCaughtUp(caughtUp.HighWatermark))
		// An Apache node writes snapshots of its own too, but loads one
		// only at start-up (it had none) or when it fetched it.
		fetched := ""
		for _, line := range strings.Split(grepLines(apache.Proc().Output(), "handleLoadSnapshot(", 100), "\n") {
			if i := strings.Index(line, "handleLoadSnapshot("); i >= 0 && fetched == "" {
				id := strings.SplitN(line[i+len("handleLoadSnapshot("):], ")", 2)[0]
				if id != "00000000000000000000-0000000000" { // the local bootstrap snapshot (4.4 format)
					fetched = id + ".checkpoint"
				}
			}
		}
		if fetched == "" {
			t.Fatalf("%s caught up to %d without loading a snapshot fetched from the kraftd leader", apache, caughtUp.HighWatermark)
		}
		at(fmt.Sprintf("Apache, started empty, loaded snapshot %s from the kraftd leader and caught up to %d", fetched, caughtUp.HighWatermark))
		if _, err := os.Stat(filepath.Join(apache.LogDir(), fetched)); err == nil {
			checkSnapshotCopied(t, MemberByID(members, caughtUp.LeaderID), apache, fetched)
		}

		apache.Kill()
		end := LogEnd(t, apache.LogDir())
		leader = MemberByID(members, caughtUp.LeaderID)
		Eventually(t, ReadyTimeout, fmt.Sprintf("%s's log to start past %d", leader, end), leader.Proc(), func() error {
			if first := FirstSegmentBase(t, leader.LogDir()); first <= end {
				return fmt.Errorf("its first segment starts at %d", first)
			}
			return nil
		})
		at(fmt.Sprintf("Apache down at log end %d; %s's log now starts past it", end, leader))

		apache.Start(t)
		final := WaitMixedLeader(t, members, VotersCaughtUp(0))
		final = WaitMixedLeader(t, members, VotersCaughtUp(final.HighWatermark))
		if first := FirstSegmentBase(t, apache.LogDir()); first <= end {
			t.Errorf("%s caught up to %d but its log still starts at %d: it did not install a newer snapshot", apache, final.HighWatermark, first)
		}
		at(fmt.Sprintf("Apache, restarted behind the log start, caught up to %d", final.HighWatermark))
	})
}

// checkGzipSnapshot checks that kraftd gzipped the data batches of its
// snapshot at path (kraftd.metadata.snapshot.compression.type's default),
// so that the Apache follower that loads it reads gzip, and that Apache's
// kafka-dump-log, and kraftd's, decode it and name the codec.
func checkGzipSnapshot(t *testing.T, version, path string) {
	t.Helper()
	raw := mustGzippedSnapshot(t, path)
	// The tools read a copy: retention deletes the node's snapshots fast.
	path = filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := ApacheDumpLog(t, version, path)
	if !strings.Contains(out, "compresscodec: gzip") || !strings.Contains(out, "FEATURE_LEVEL_RECORD") || strings.Contains(out, "Exception") {
		t.Fatalf("kafka-dump-log %s on %s:\n%s", version, path, out)
	}
	if own := KraftdDumpLog(t, path); !strings.Contains(own, "compresscodec: gzip") {
		t.Fatalf("kraftd dump-log on %s:\n%s", path, own)
	}
}

// mustGzippedSnapshot reads the snapshot file at path and fails the test
// unless a data batch of it is gzipped (kraftd's default).
func mustGzippedSnapshot(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gzipped := 0
	if _, err := batch.Walk(raw, func(h batch.Header, _ []byte) error {
		if !h.IsControl() && h.Codec() == "gzip" {
			gzipped++
		}
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if gzipped == 0 {
		t.Fatalf("%s has no gzipped data batch", path)
	}
	return raw
}
