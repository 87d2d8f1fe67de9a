// Package compat proves kraftd against real Apache Kafka processes: it
// fetches Apache Kafka with Maven into a cache outside the repository,
// starts controllers, brokers and tools on loopback ports, and holds the
// interop tests and golden bytes captured from them. It also checks the
// dashboard and alert rules in deploy/ against a real Prometheus scraping
// real kraftd processes (harness_dashboard.go).
//
// It also runs kraftd's OCI image with podman (image_test.go), kraftd's
// containers beside Apache's processes.
//
// It injects silent faults into quorums of real processes (harness_nemesis.go,
// with package internal/nemesis): pauses, partitions on loopback and
// frozen disks.
//
// It must never leave a process running: everything it starts is stopped by
// PID (a container by its name) when the test ends, pass or fail, and
// every fault is ended and its means removed.
package compat
