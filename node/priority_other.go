//go:build !linux

package node

// lowerThreadPriority does nothing where kraftd does not know how to lower
// one thread's priority.
func lowerThreadPriority(Urgency) {}
