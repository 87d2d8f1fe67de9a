// Package compat proves kraftd against real Apache Kafka processes, Apache
// being the oracle. Its harness starts Apache controllers, brokers and
// tools (from the jars `make kafka` caches, package internal/apachekafka;
// a test whose release is missing fails and says so) and kraftd's race
// build on loopback ports, in quorums of either or both; puts a
// FrameProxy between them to record or alter the frames they exchange;
// and bounds the JVMs running at once (JVMBudget, ReserveJVMs). Its tests
// are the interop tests, the golden bytes captured from Apache
// (testdata), chaos runs with checked histories, and the benchmarks that
// put kraftd's figure beside Apache's.
//
// It also holds SimBroker, a broker reduced to what its controller sees
// (registration and heartbeats), for fleets larger than JVMs allow; checks
// the dashboard and alert rules in deploy/ against a real Prometheus
// scraping real kraftd processes (harness_dashboard.go); runs kraftd's OCI
// image with podman beside Apache's processes (image_test.go); and injects
// silent faults into quorums of real processes (harness_nemesis.go, with
// package internal/nemesis): pauses, partitions on loopback and frozen
// disks.
//
// It must never leave a process running: everything it starts is stopped by
// PID (a container by its name) when the test ends, pass or fail, and
// every fault is ended and its means removed. A kraftd node runs here only
// as a separate process.
package compat
