// Package failover is an example of testing a Kafka client against real
// Apache Kafka brokers started by github.com/kraftd/kraftd/kit: its test
// produces and consumes with franz-go, kills the broker leading the
// partition, and shows the client carrying on. It is a module of its own,
// as a user's would be; `make test` runs it.
package failover
