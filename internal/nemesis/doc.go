// Package nemesis injects the faults a process does not announce, for the
// tests that run real controllers (package compat): packets between two
// processes on loopback dropped in one direction or both, and a file
// system whose writes stall. Pausing a process (SIGSTOP, SIGCONT) needs
// nothing from the host and is the supervisor's (Process.Pause).
//
// A Net gives each process a cgroup (v2) of its own, which the process
// must start in (supervisor.Process.Cgroup, or StartCmdIn), and a pair
// of iptables chains of the test's own: on the way out a packet is marked
// with its sender's cgroup and a connection with the cgroup that opened
// it; on the way in a packet whose sender is cut from its receiver is
// dropped, silently for the sender, as a broken network would. A Disk is
// an ext4 file system in a file of the test's, loop-mounted on a
// directory, that fsfreeze stalls.
//
// It needs root, iptables (with the cgroup, conntrack and connmark
// matches), a cgroup v2 hierarchy, losetup, mkfs.ext4 and fsfreeze, and
// fails the test when any is missing: a fault test that skips proves
// nothing. It changes only what it made (its chains and the two jumps to
// them, its cgroups, its loop device and mount), names them uniquely so
// that tests run in parallel, and removes them at the test's end, passed or
// failed, after the test's processes have been stopped. It must never
// touch another rule, cgroup or mount, nor signal a process.
package nemesis
