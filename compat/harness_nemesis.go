package compat

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kraftd/kraftd/internal/nemesis"
)

// Fault is a way a chaos run makes a controller fail.
type Fault string

// The faults: only a SIGKILL closes the victim's connections; the others
// leave its peers to notice silence.
const (
	FaultKill      Fault = "SIGKILL"
	FaultPause     Fault = "SIGSTOP"
	FaultPartition Fault = "partition"  // cut from every other controller, both ways
	FaultMute      Fault = "one-way"    // its packets to the others dropped; theirs reach it
	FaultDisk      Fault = "disk stall" // its metadata.log.dir frozen (fsfreeze)
)

// Nemesis holds the means of a quorum's silent faults: a packet filter
// knowing every member by its cgroup, and each member's metadata.log.dir
// on a file system of its own (package internal/nemesis).
type Nemesis struct {
	Net   *nemesis.Net
	Disks map[int32]*nemesis.Disk
}

// NewNemesisQuorum is NewMixedStaticQuorum with every member in a cgroup
// of a nemesis.Net and its directory on a nemesis.Disk.
func NewNemesisQuorum(t testing.TB, opts MixedOptions) ([]*MixedMember, string, *Nemesis) {
	t.Helper()
	n := &Nemesis{Net: nemesis.NewNet(t), Disks: map[int32]*nemesis.Disk{}}
	opts.Prepare = func(t testing.TB, m *MixedMember) {
		cg := n.Net.Node(m.ID, m.Port)
		if m.Apache != nil {
			m.Apache.Cgroup = cg
		}
		m.cgroup = cg
		n.Disks[m.ID] = nemesis.NewDisk(t, m.Dir)
	}
	members, clusterID := NewMixedStaticQuorum(t, opts)
	return members, clusterID, n
}

// inject makes victim fail as f says and returns what ends the fault. A
// fault the test leaves in place is ended at the test's end, before its
// processes are stopped.
func (c *ChaosCluster) inject(t testing.TB, f Fault, victim *MixedMember) (heal func()) {
	t.Helper()
	if f != FaultKill && c.Nemesis == nil {
		t.Fatalf("compat: a %s needs a quorum made by NewNemesisQuorum", f)
	}
	switch f {
	case FaultKill:
		victim.Kill()
		return func() { victim.Start(t) }
	case FaultPause:
		p := victim.Proc()
		if err := p.Pause(); err != nil {
			t.Fatalf("compat: SIGSTOP %s: %v", victim, err)
		}
		t.Cleanup(func() { _ = p.Resume() }) // Resume of a process already resumed or gone does nothing
		return func() {
			if err := p.Resume(); err != nil {
				t.Fatalf("compat: SIGCONT %s: %v", victim, err)
			}
		}
	case FaultPartition:
		c.Nemesis.Net.Isolate(victim.ID)
		return c.Nemesis.Net.Heal
	case FaultMute:
		for _, m := range Without(c.Members, victim) {
			c.Nemesis.Net.Cut(victim.ID, m.ID)
		}
		return c.Nemesis.Net.Heal
	case FaultDisk:
		d := c.Nemesis.Disks[victim.ID]
		d.Freeze()
		return d.Thaw
	}
	t.Fatalf("compat: unknown fault %q", f)
	return nil
}

// probeWrites sends creates to addr, one at a time and failoverPoll apart,
// until one is acknowledged or ctx ends, each recorded in the history: the
// first write a survivor acknowledges after a fault is then not late for
// want of a writer, however long the writers wait on the failed leader.
// A name answered for certain is not sent again.
func (c *ChaosCluster) probeWrites(ctx context.Context, addr string) {
	var conn *Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	name := ""
	for ctx.Err() == nil {
		if conn == nil {
			var err error
			if conn, err = Dial(ctx, addr); err != nil {
				sleepCtx(ctx, failoverPoll)
				continue
			}
		}
		if name == "" {
			name = fmt.Sprintf("probe-%d", c.nextProbe.Add(1))
		}
		op := c.History.CallCreate(name)
		wctx, cancel := context.WithTimeout(ctx, chaosWriteTimeout)
		answer, err := CreateTopic1(wctx, conn, name, 1, 1)
		cancel()
		c.History.AnswerCreate(op, addr, answer.ErrorCode, answer.TopicID, err)
		switch {
		case err != nil:
			conn.Close()
			conn = nil
		case answer.ErrorCode == 0:
			return
		case answer.ErrorCode != kerr.NotController.Code && answer.ErrorCode != kerr.RequestTimedOut.Code:
			name = ""
		}
		sleepCtx(ctx, failoverPoll)
	}
}
