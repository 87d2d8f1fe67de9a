package server

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// OpsSettings are kraftd's own keys for operating a node (they have no
// Apache counterpart): the metrics listener and what it serves.
type OpsSettings struct {
	// MetricsAddr is kraftd.metrics.listener's host:port, "" when unset:
	// no metrics, health or readiness are served.
	MetricsAddr string
	// Pprof is kraftd.metrics.pprof.enable: net/http/pprof on the metrics
	// listener. Profiles show the process's memory and code, so it is off
	// unless asked for.
	Pprof bool
	// ReadyMaxContactAgeMs (kraftd.readiness.max.contact.age.ms) and
	// ReadyMaxLagRecords (kraftd.readiness.max.lag.records) bound how
	// stale a ready node may be (metrics.ReadyBounds).
	ReadyMaxContactAgeMs int64
	ReadyMaxLagRecords   int64
}

// opsSettings reads the kraftd.* operation keys.
func (p *parser) opsSettings() OpsSettings {
	o := OpsSettings{
		Pprof:                p.boolean("kraftd.metrics.pprof.enable"),
		ReadyMaxContactAgeMs: p.long("kraftd.readiness.max.contact.age.ms", 1),
		ReadyMaxLagRecords:   p.long("kraftd.readiness.max.lag.records", 0),
	}
	if v := p.str("kraftd.metrics.listener", ""); v != "" {
		addr, err := metricsAddr(v)
		if err != nil {
			p.setErr("kraftd.metrics.listener", err)
		}
		o.MetricsAddr = addr
	}
	if o.Pprof && o.MetricsAddr == "" {
		p.setErr("kraftd.metrics.pprof.enable", errors.New("is true, but kraftd.metrics.listener, where pprof would be served, is not set"))
	}
	return o
}

// metricsAddr checks a kraftd.metrics.listener value, http://host:port,
// and returns host:port.
func metricsAddr(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL like http://127.0.0.1:9404", v)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("%q: only http:// is served (scheme %q), e.g. http://127.0.0.1:9404", v, u.Scheme)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: give only http://host:port; the paths served are /metrics, /healthz and /readyz", v)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return "", fmt.Errorf("%q has no host:port, e.g. http://127.0.0.1:9404", v)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%q: port %q is not a number from 0 to 65535", v, port)
	}
	return net.JoinHostPort(host, port), nil
}

// silenceSettings reads the failure detector's keys (quorum/silence.go):
// how long a follower's Fetch may wait at the leader, and how long a
// follower hears nothing from its leader before it takes it for failed.
// The bound must leave room for a few answers: under three waits, a
// leader that is only slow would be replaced. A bound not below
// controller.quorum.fetch.timeout.ms adds nothing and is turned off.
func (p *parser) silenceSettings(c *Config) {
	c.FetchMaxWaitMs = int32(p.long(fetchMaxWaitKey, 1))
	c.SilenceTimeoutMs = int(p.long(silenceTimeoutKey, 0))
	if c.SilenceTimeoutMs > 0 && int64(c.SilenceTimeoutMs) < 3*int64(c.FetchMaxWaitMs) {
		p.setErr(silenceTimeoutKey, fmt.Errorf("is %d, under 3 × %s (%d): a live leader answers only every %s; raise it, lower %s, or set it to 0 (the fetch timeout alone)",
			c.SilenceTimeoutMs, fetchMaxWaitKey, c.FetchMaxWaitMs, fetchMaxWaitKey, fetchMaxWaitKey))
	}
	if c.SilenceTimeoutMs >= c.FetchTimeoutMs {
		c.SilenceTimeoutMs = 0
	}
}

const (
	fetchMaxWaitKey   = "kraftd.quorum.fetch.max.wait.ms"
	silenceTimeoutKey = "kraftd.quorum.silence.timeout.ms"
)
