package metrics

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/server"
)

// Metrics is one process's metrics: what the runtime and the server tell it
// as they work (it is their node.Meter and server.Meter), and, once Serve
// names a Source, what each scrape reads from the node's published state.
type Metrics struct {
	reg *prometheus.Registry
	now func() time.Time

	// Apache's windowed raft-metrics statistics (window.go); latencies in
	// milliseconds, as Apache's.
	commitLatency, electionLatency *windowed
	appendRecords, fetchRecords    *windowed
	pollIdle                       *windowed // idle seconds; its rate is the idle ratio

	commitSeconds, fsyncSeconds, electionSeconds prometheus.Histogram
	requestSeconds                               *prometheus.HistogramVec
	requestFailures                              *prometheus.CounterVec
	connections                                  *prometheus.CounterVec
	openConnections                              *prometheus.GaugeVec
	reauthentications                            *prometheus.CounterVec

	newActive      atomic.Int64
	metadataErrors atomic.Int64
	// lastApplied and lastAppliedTimeMs are the state machine's position
	// and the append time of its last record (-1 until known).
	lastApplied, lastAppliedTimeMs atomic.Int64
	// snapshotsLoaded counts the snapshots the image took; snapshotBytes
	// and snapshotAtMs are the size and time of the last one written (the
	// start of the process until one is).
	snapshotsLoaded, snapshotBytes, snapshotAtMs atomic.Int64
}

var (
	_ node.Meter   = (*Metrics)(nil)
	_ server.Meter = (*Metrics)(nil)
)

// New builds the metrics of one process, with Go's runtime and process
// collectors (process_open_fds is on Strimzi's KRaft dashboard).
func New() *Metrics {
	now := time.Now()
	m := &Metrics{
		reg:             prometheus.NewRegistry(),
		now:             time.Now,
		commitLatency:   newWindowed(now),
		electionLatency: newWindowed(now),
		appendRecords:   newWindowed(now),
		fetchRecords:    newWindowed(now),
		pollIdle:        newWindowed(now),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kraftd_raft_commit_latency_seconds",
			Help:    "Time from the leader writing a batch to its commit (every batch, idle records included).",
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 10, 18),
		}),
		fsyncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kraftd_log_fsync_duration_seconds",
			Help:    "Time one fsync of the metadata log took.",
			Buckets: prometheus.ExponentialBucketsRange(0.00005, 5, 18),
		}),
		electionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kraftd_raft_election_duration_seconds",
			Help:    "Time from losing the leader (or starting an election) to knowing a leader again.",
			Buckets: prometheus.ExponentialBucketsRange(0.001, 60, 18),
		}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kraftd_request_duration_seconds",
			Help:    "Time a request's handler took, by listener and API (a parked Fetch waits up to its MaxWaitMs).",
			Buckets: prometheus.ExponentialBucketsRange(0.00005, 10, 18),
		}, []string{"listener", "api"}),
		requestFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kraftd_request_failures_total",
			Help: "Requests whose handler failed, closing the connection, by listener and API.",
		}, []string{"listener", "api"}),
		connections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kraftd_connections_total",
			Help: "Connections by listener and how their set-up ended: accepted, refused (a connection limit), tls_failed, sasl_failed.",
		}, []string{"listener", "outcome"}),
		openConnections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kraftd_connections_open",
			Help: "Accepted connections open now, by listener.",
		}, []string{"listener"}),
		reauthentications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kraftd_sasl_reauthentications_total",
			Help: "SASL re-authentications (KIP-368) by listener and outcome: succeeded, failed (the connection closed), expired (closed: a request came after the session ended).",
		}, []string{"listener", "outcome"}),
	}
	m.snapshotAtMs.Store(now.UnixMilli())
	m.lastApplied.Store(-1)
	m.lastAppliedTimeMs.Store(-1)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.commitSeconds, m.fsyncSeconds, m.electionSeconds, m.requestSeconds, m.requestFailures, m.connections, m.openConnections, m.reauthentications)
	return m
}

// Registry is where every metric of the process is registered.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Committed implements node.Meter.
func (m *Metrics) Committed(latency time.Duration) {
	m.commitLatency.record(millis(latency), m.now())
	m.commitSeconds.Observe(latency.Seconds())
}

// Appended implements node.Meter.
func (m *Metrics) Appended(records int, asLeader bool) {
	if asLeader {
		m.appendRecords.record(float64(records), m.now())
	} else {
		m.fetchRecords.record(float64(records), m.now())
	}
}

// Fsynced implements node.Meter.
func (m *Metrics) Fsynced(d time.Duration) { m.fsyncSeconds.Observe(d.Seconds()) }

// Elected implements node.Meter.
func (m *Metrics) Elected(d time.Duration) {
	m.electionLatency.record(millis(d), m.now())
	m.electionSeconds.Observe(d.Seconds())
}

// Replayed implements node.Meter.
func (m *Metrics) Replayed(lastOffset, appendTimeMs int64) {
	m.lastApplied.Store(lastOffset)
	if appendTimeMs >= 0 {
		m.lastAppliedTimeMs.Store(appendTimeMs)
	}
}

// ReplayFailed implements node.Meter.
func (m *Metrics) ReplayFailed() { m.metadataErrors.Add(1) }

// Activated implements node.Meter.
func (m *Metrics) Activated() { m.newActive.Add(1) }

// Idled implements node.Meter.
func (m *Metrics) Idled(d time.Duration) { m.pollIdle.record(d.Seconds(), m.now()) }

// SnapshotLoaded implements node.Meter.
func (m *Metrics) SnapshotLoaded() { m.snapshotsLoaded.Add(1) }

// SnapshotWritten implements node.Meter.
func (m *Metrics) SnapshotWritten(bytes int64, at time.Time) {
	m.snapshotBytes.Store(bytes)
	m.snapshotAtMs.Store(at.UnixMilli())
}

// Connection implements server.Meter.
func (m *Metrics) Connection(listener, outcome string) {
	m.connections.WithLabelValues(listener, outcome).Inc()
	if outcome == server.ConnAccepted {
		m.openConnections.WithLabelValues(listener).Inc()
	}
}

// Reauthentication implements server.Meter.
func (m *Metrics) Reauthentication(listener, outcome string) {
	m.reauthentications.WithLabelValues(listener, outcome).Inc()
}

// ConnectionClosed implements server.Meter.
func (m *Metrics) ConnectionClosed(listener string) {
	m.openConnections.WithLabelValues(listener).Dec()
}

// Request implements server.Meter.
func (m *Metrics) Request(listener string, key int16, d time.Duration, failed bool) {
	api := kmsg.NameForKey(key)
	if api == "" {
		api = strconv.Itoa(int(key))
	}
	m.requestSeconds.WithLabelValues(listener, api).Observe(d.Seconds())
	if failed {
		m.requestFailures.WithLabelValues(listener, api).Inc()
	}
}
