package controller

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// timedState is what Tick remembers between calls: which timed work is in
// flight (each is one operation at a time, as Apache runs them) and when
// the periodic ones are due next.
type timedState struct {
	fencing, balancing, registering, sweeping bool
	nextBalance, nextRegistration, nextSweep  time.Time
}

// registrationRetry is how long a failed self-registration waits before
// the next try.
const registrationRetry = time.Second

// Tick does the active controller's timed work due at now: it fences
// brokers whose session expired, one after another until none is left;
// every LeaderImbalanceCheck, with AutoLeaderRebalance, it moves
// leadership back to preferred replicas; and it writes this controller's
// own registration once metadata.version allows one and the image lacks
// it (a controller that does not lead sends ControllerRegistration to the
// leader instead, which is I/O and so its runtime's business). On a node
// that does not lead it lets go of the speculative image. The work is
// queued like any operation; Settings.Report hears how it ends.
func (c *Core) Tick(now time.Time) {
	c.observe(now)
	t := &c.timed
	if t.nextBalance.IsZero() {
		t.nextBalance = now.Add(c.settings.LeaderImbalanceCheck)
	}
	if !c.quorum.Leader {
		c.dropSpec()
		return
	}
	if !t.fencing {
		t.fencing = true
		c.fenceAll(now)
	}
	if c.settings.AutoLeaderRebalance && !t.balancing && !now.Before(t.nextBalance) {
		t.balancing, t.nextBalance = true, now.Add(c.settings.LeaderImbalanceCheck)
		c.BalanceLeaders(now, func(moved int, err error) {
			t.balancing = false
			c.report("balance", moved, err)
		})
	}
	c.sweepTokens(now)
	if !t.registering && !now.Before(t.nextRegistration) && c.needsSelfRegistration() {
		t.registering = true
		c.RegisterController(now, selfRegistration(&c.settings), func(err error) {
			t.registering = false
			if err != nil {
				t.nextRegistration = c.now.Add(registrationRetry)
			}
			c.report("register", 0, err)
		})
	}
}

// fenceAll fences expired brokers one operation at a time: each is built
// once the one before has committed. Apache queues the next as the one
// before is built (QuorumController reschedules its fencing from inside
// the operation); doing so here made a rack's fencing 1.9 s once and
// 39.5 s the next time, not understood yet (branch fence).
func (c *Core) fenceAll(now time.Time) {
	c.FenceStaleBrokers(now, func(fenced bool, err error) {
		if fenced {
			c.report("fence", 1, nil)
			c.fenceAll(c.now)
			return
		}
		c.timed.fencing = false
		if err != nil {
			c.report("fence", 0, err)
		}
	})
}

// RegistrationToSend is this controller's ControllerRegistration when it
// must send one to the leader, as Apache's controllers do: it does not
// lead, and metadata.version allows a registration the committed image
// lacks. Otherwise nil (the active controller writes its own, Tick).
// Sending it is I/O, the runtime's business.
func (c *Core) RegistrationToSend() *kmsg.ControllerRegistrationRequest {
	if c.quorum.Leader || !c.needsSelfRegistration() {
		return nil
	}
	return selfRegistration(&c.settings)
}

// needsSelfRegistration reports whether the committed image should, and
// does not yet, hold this controller's registration.
func (c *Core) needsSelfRegistration() bool {
	return c.ctl.MetadataVersion() >= MVControllerRegistration && !c.ctl.ControllerRegistered(c.settings.NodeID, c.settings.Incarnation)
}

func (c *Core) report(work string, count int, err error) {
	if c.settings.Report != nil {
		c.settings.Report(work, count, err)
	}
}
