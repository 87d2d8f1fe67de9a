// Package controller is the cluster metadata state machine: broker and
// controller registrations, heartbeats and fencing, topics and partitions,
// features and producer ids. A request becomes metadata records that are
// proposed to the quorum and answered when they commit.
//
// Applying committed records must be deterministic: it never reads the clock
// or does I/O; timestamps arrive inside records.
package controller
