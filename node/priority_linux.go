package node

import "syscall"

// backgroundNiceStep is how much the thread writing a snapshot is niced
// below the rest of the process: 10 steps is a tenth of the CPU weight, so
// that heartbeats, the quorum's own work and the other processes on the
// machine go first, while the snapshot still progresses on a busy machine
// (nice 19 would leave it about 1.5%).
const backgroundNiceStep = 10

// lowerThreadPriority lowers the calling OS thread's scheduling priority
// by backgroundNiceStep, never raising it; on Linux, setpriority with a
// thread id applies to that thread alone, and lowering needs no privilege.
// A failure only costs latency, so it is ignored.
func lowerThreadPriority() {
	tid := syscall.Gettid()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return
	}
	nice := 20 - raw // the raw system call answers 20 minus the nice value
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(19, nice+backgroundNiceStep))
}
