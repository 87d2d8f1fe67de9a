package compat

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRecoverLaggingSurvivor recovers a survivor that lacks committed
// metadata the broker has: the survivor is killed first, a topic is
// created with the other two controllers, then they are lost. The
// recovered leader asks the Apache 4.4.0 broker to cut its metadata log
// below its high watermark, which Apache refuses by stopping the broker
// (a fatal fault); restarted, the broker cuts it (its high watermark is
// not kept on disk), follows, and keeps every acknowledged record (after an
// unclean election of the partition whose only replica stopped uncleanly);
// the topic the survivor never saw is lost. Then the lost controllers, whose
// logs are longer and who are a majority of the old voter set, come back
// with their old directories: whatever they do among themselves, the
// survivor keeps leading its epoch and the broker follows it.
func TestRecoverLaggingSurvivor(t *testing.T) {
	t.Parallel()
	at := stamp(t)
	ctls, brokers := startRecoverCluster(t)
	cur := WaitLeader(t, Addrs(ctls...), nil)
	broker := brokers.Brokers[0]
	CreateTopic(t, broker.Addr(), "acked", 1, 1, nil)
	acked := produceAcked(t, broker.Addr(), "acked", 100)
	survivor := ctls[slices.IndexFunc(ctls, func(n *kraftdNode) bool { return n.ID != cur.LeaderID })]
	survivor.Proc.Kill()
	createAndSee(t, broker, "late") // the survivor misses it
	lost := slices.DeleteFunc(slices.Clone(ctls), func(n *kraftdNode) bool { return n == survivor })
	for _, n := range lost {
		n.Proc.Kill()
		if err := os.Rename(n.Dir, n.Dir+".old"); err != nil {
			t.Fatal(err)
		}
	}
	at("a survivor that lags the broker; its two peers lost")

	if out, code := runRecover(t, survivor.Conf, "--yes-i-lost-the-majority"); code != 0 {
		t.Fatalf("recover: exit %d:\n%s", code, out)
	}
	survivor.start(t)
	rec := WaitLeader(t, []string{survivor.Addr()}, nil)
	if err := broker.Proc.Wait(ReadyTimeout); err == nil || !strings.Contains(broker.Proc.Output(), "below the current high watermark") {
		t.Fatalf("the broker ahead of the recovered log: %v, want a fatal fault naming the truncation below its high watermark", err)
	}
	broker.Start(t)
	brokers.WaitUnfenced(t, 101)
	// The fault stopped the broker uncleanly: the controller keeps its
	// only replica out of the election (KIP-966, as Apache's does), so
	// the partition needs an unclean one; its log holds every record.
	electUnclean(t, brokers, "acked", 0)
	checkConsumed(t, broker.Addr(), "acked", acked)
	CreateTopic(t, broker.Addr(), "after-recovery", 1, 1, nil)
	if m, err := Metadata(broker.Addr(), "late"); err != nil || len(m.Leaders["late"]) != 0 {
		t.Fatalf("the topic only the lost controllers held: %+v, %v; want it gone", m, err)
	}
	at("the broker stopped on the truncation and, restarted, follows the recovered node")

	for _, n := range lost {
		if err := os.Rename(n.Dir+".old", n.Dir); err != nil {
			t.Fatal(err)
		}
		n.start(t)
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		s, err := DescribeQuorum(survivor.Addr())
		if err != nil || s.LeaderID != survivor.ID || s.LeaderEpoch != rec.LeaderEpoch || !slices.Equal(s.Voters, []int32{survivor.ID}) {
			t.Fatalf("the survivor while the old voters are back: %+v, %v", s, err)
		}
		for _, n := range lost {
			if o, err := DescribeQuorum(n.Addr()); err == nil && o.LeaderID >= 0 {
				// Not prevented (docs/operations.md): the old majority may
				// elect in an old epoch before it hears of the new one.
				t.Logf("old voter %d answers as leader %d of epoch %d", n.ID, o.LeaderID, o.LeaderEpoch)
				if o.LeaderEpoch >= rec.LeaderEpoch {
					t.Fatalf("an old voter leads epoch %d, not below the recovered %d", o.LeaderEpoch, rec.LeaderEpoch)
				}
			}
		}
	}
	createAndSee(t, broker, "after-fence")
	saysNoVoter(t, lost)
	at("old voters with longer logs back: the survivor kept leading")
}
