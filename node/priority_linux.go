package node

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// backgroundNiceStep is how much the thread writing the leader's snapshot
// (Yielding) is niced below the rest of the process: 10 steps is a tenth
// of the CPU weight, so that heartbeats, the quorum's own work and the
// other processes on the machine go first, while the snapshot still
// progresses on a busy machine (nice 19, a follower's, would leave it
// about 1.5%).
const backgroundNiceStep = 10

// backgroundSliceNs is the time slice the thread asks for (Linux 6.12's
// sched_setattr slice for SCHED_OTHER): a thread of lower weight still
// keeps the CPU for the rest of its slice, about 1.5 ms by default on two
// CPUs, when a heartbeat's thread wakes; with 0.1 ms, the least the
// kernel grants, the heartbeat waits at most that.
const backgroundSliceNs = 100_000

// lowerThreadPriority lowers the calling OS thread's scheduling priority
// for work of urgency, never raising it: by backgroundNiceStep for
// Yielding work, to nice 19 for Idle; and it shortens the thread's slice
// where the kernel allows. On Linux these apply to the one thread, and need no
// privilege. SCHED_IDLE is not used: a thread holding one of Go's Ps must
// reach a safe point for every garbage collection to stop the world, and
// starving it stalled the whole process (heartbeat p99 28 ms during a
// snapshot). A failure only costs latency, so it is ignored.
func lowerThreadPriority(urgency Urgency) {
	tid := syscall.Gettid()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return
	}
	nice := min(19, 20-raw+backgroundNiceStep) // the raw system call answers 20 minus the nice value
	if urgency == Idle {
		nice = 19
	}
	attr := unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: int32(nice), Runtime: backgroundSliceNs}
	if unix.SchedSetAttr(0, &attr, 0) != nil {
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice)
	}
}
