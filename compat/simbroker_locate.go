package compat

import (
	"context"
	"sync"
	"time"
)

// ControllerLocator tells simulated brokers where the active controller is.
// It asks the voters with DescribeQuorum, which only a leader answers with
// a leader id, and maps that id to its address through the static voter
// set. Brokers share one locator, so a leader change costs one round of
// DescribeQuorum, not one per broker.
type ControllerLocator struct {
	voters map[int32]string // node id -> CONTROLLER address
	poll   time.Duration    // pause between rounds of DescribeQuorum

	mu     sync.Mutex
	addr   string // "" until found, or after Invalidate
	epoch  int32
	leader int32
}

// NewControllerLocator returns a locator over a static voter set.
func NewControllerLocator(voters map[int32]string) *ControllerLocator {
	return &ControllerLocator{voters: voters, leader: -1, poll: PollInterval}
}

// PollEvery sets the pause between rounds of DescribeQuorum while no voter
// names a leader. The failover measurements poll every few milliseconds so
// that the locator's pause does not hide how fast a new leader came.
func (l *ControllerLocator) PollEvery(d time.Duration) *ControllerLocator {
	l.poll = d
	return l
}

// Leader returns the active controller's address and leader epoch, asking
// the voters until one names a leader or ctx ends. Callers hold the lock
// while one of them asks, so a thousand brokers meeting NOT_CONTROLLER at
// once send one round of DescribeQuorum.
func (l *ControllerLocator) Leader(ctx context.Context) (addr string, epoch int32, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.addr == "" {
		for _, a := range l.voters {
			s, err := DescribeQuorum(a)
			if err != nil || s.LeaderID < 0 {
				continue
			}
			if leaderAddr, ok := l.voters[s.LeaderID]; ok {
				l.addr, l.epoch, l.leader = leaderAddr, s.LeaderEpoch, s.LeaderID
				break
			}
		}
		if l.addr != "" {
			break
		}
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-time.After(l.poll):
		}
	}
	return l.addr, l.epoch, nil
}

// LeaderID is the last leader found, or -1.
func (l *ControllerLocator) LeaderID() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader
}

// Invalidate forgets the leader if it is still addr: a broker told
// NOT_CONTROLLER by addr (or whose connection to it broke) calls it, and the
// next Leader asks the voters again. A stale report about an address
// already replaced is ignored.
func (l *ControllerLocator) Invalidate(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addr == addr {
		l.addr, l.leader = "", -1
	}
}
