// Package kit starts real Apache Kafka clusters for tests: stock Apache
// brokers of a chosen version on a controller quorum of kraftd processes,
// Apache controllers, or both, on loopback ports, with no Docker. It owns
// the cluster's processes from start to stop: fetching the Apache Kafka
// jars, formatting every node, waiting until the cluster takes produce
// requests, and killing, stopping, restarting or pausing any node.
//
// The kit runs only on Linux: its children get the kernel's parent-death
// signal (internal/supervisor), which no other system has, so elsewhere
// Start fails with supervisor.ErrUnsupported instead of leaving JVMs behind.
//
// Start takes a context and a Spec; StartT does the same for a test and
// stops the cluster when the test ends:
//
//	cluster := kit.StartT(t, kit.Spec{Brokers: 3, Kafka: "4.4.0"})
//	client, _ := kgo.NewClient(kgo.SeedBrokers(cluster.Bootstrap()...))
//	cluster.Brokers()[0].Kill() // SIGKILL, as a crash
//
// What it needs: Java 17 or newer, and Apache Maven the first time a
// version is used, which fetches that version's jars (about 55 MB, 92
// jars for 4.4.0) from Maven Central into $KRAFTD_KAFKA_CACHE
// (~/.cache/kraftd/kafka), the cache `make kafka` fills too; later runs
// reuse it. The first use logs what it fetches and how long it took
// (Spec.Logf). kraftd itself is $KRAFTD_BINARY, or is built with `go build`
// from this module's source beside the cache.
//
// No process outlives the program: Stop stops every node by PID (SIGTERM,
// then SIGKILL after 30 seconds), each node runs in its own process group
// (a terminal's Ctrl-C reaches only the Go program), and each is started
// with a parent-death signal (SIGKILL from the kernel should the program
// die or panic without stopping it). The JVMs are started directly, not
// through a shell, so that the signal reaches them.
//
// Each node has one PLAINTEXT listener (brokers) or CONTROLLER listener
// (controllers) on 127.0.0.1, or with Spec.TLS an SSL one and a
// CONTROLLER listener over TLS, with certificates the kit makes (TLSConfig,
// CAFile); with Spec.SASL every listener also asks for SASL, as one user,
// SASLUser (SASLMechanism, ClientProperties); the quorum is a static voter set; brokers
// replicate internal topics up to three ways and have a 512 MiB heap.
// A Spec with a Dir keeps the cluster there (data, configuration, logs and
// a cluster.json state file with its ports and PIDs), and a later Start on
// that Dir brings the same cluster back.
package kit
