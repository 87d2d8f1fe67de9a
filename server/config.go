package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/kafkaconfig"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/security/sasl"
	kraftdtls "github.com/kraftd/kraftd/security/tls"
)

// Endpoint is one listener address, as in `NAME://host:port`.
type Endpoint struct {
	Name string
	Host string
	Port uint16
}

func (e Endpoint) String() string {
	return fmt.Sprintf("%s://%s", e.Name, net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
}

// Voter is one entry of controller.quorum.voters (`id@host:port`).
type Voter struct {
	ID   int32
	Host string
	Port uint16
}

// Config is a controller's configuration, read from Apache Kafka's own
// server.properties keys so that an operator can reuse an Apache controller's
// file unchanged.
type Config struct {
	NodeID                 int32
	Voters                 []Voter  // controller.quorum.voters (static quorum)
	BootstrapServers       []string // controller.quorum.bootstrap.servers (dynamic quorum)
	AutoJoin               bool     // controller.quorum.auto.join.enable
	Listeners              []Endpoint
	AdvertisedListeners    []Endpoint // falls back to Listeners
	ControllerListenerName []string
	MetadataLogDir         string
	LogDirs                []string

	ElectionTimeoutMs    int
	FetchTimeoutMs       int
	ElectionBackoffMaxMs int
	// SilenceTimeoutMs and FetchMaxWaitMs are kraftd.quorum.silence.timeout.ms
	// and kraftd.quorum.fetch.max.wait.ms (quorum/silence.go); the bound
	// is 0 (off) when it is not below the fetch timeout.
	SilenceTimeoutMs   int
	FetchMaxWaitMs     int32
	RequestTimeoutMs   int
	RetryBackoffMs     int
	MaxFrameSize       int32
	SegmentBytes       int64
	SegmentMs          int64
	MaxRetentionBytes  int64
	MaxRetentionMs     int64
	SnapshotBytes      int64 // metadata.log.max.record.bytes.between.snapshots
	SnapshotIntervalMs int64
	// SnapshotGzip is kraftd.metadata.snapshot.compression.type=gzip (the
	// default): the node gzips its snapshots' data batches.
	SnapshotGzip           bool
	IdleIntervalMs         int
	BrokerSessionTimeoutMs int
	BrokerHeartbeatMs      int

	// Connection limits, so that one client cannot exhaust the node.
	MaxConnections      int   // max.connections: open connections, all listeners
	MaxConnectionsPerIP int   // max.connections.per.ip
	ConnMaxIdleMs       int64 // connections.max.idle.ms; also the write timeout
	// FailedAuthDelayMs is connection.failed.authentication.delay.ms: how
	// long a connection that failed SASL authentication is held before it
	// is closed, to slow down password guessing.
	FailedAuthDelayMs int64
	// MaxFailedAuthPerAddress and MaxFailedAuthPerPrincipal bound failed
	// SASL authentications a minute from one client address and as one
	// principal (kraftd.sasl.max.failed.authentications.per.address and
	// .per.principal; 0 is unbounded); see sasl.FailureLimits.
	MaxFailedAuthPerAddress   int
	MaxFailedAuthPerPrincipal int
	// QueuedMaxRequests is queued.max.requests, which kraftd applies per
	// connection: requests read from one connection and not yet answered.
	// Apache's is node-wide (500), over a queue kraftd does not have: here
	// every request has its own goroutine at once, and a node-wide count
	// would let one client's parked fetches lock every other client out.
	QueuedMaxRequests int
	// QueuedMaxRequestBytes is queued.max.request.bytes: the one node-wide
	// memory budget for what all connections hold (requests being read,
	// decoded and handled, answers not yet written); -1 is unbounded.
	QueuedMaxRequestBytes int64

	// Topic defaults and leader balancing, as on an Apache controller.
	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	UncleanLeaderElection    bool  // unclean.leader.election.enable
	AutoLeaderRebalance      bool  // auto.leader.rebalance.enable
	LeaderImbalanceCheckS    int   // leader.imbalance.check.interval.seconds

	// ListenerProtocols is listener.security.protocol.map for the
	// configured listeners: PLAINTEXT or SSL.
	ListenerProtocols map[string]string
	// TLS holds each SSL listener's ssl.* settings; LoadTLS reads their
	// stores.
	TLS         map[string]*kraftdtls.Settings
	tlsMaterial map[string]*kraftdtls.Material
	// SASL holds each SASL_PLAINTEXT and SASL_SSL listener's sasl.*
	// settings.
	SASL map[string]*sasl.Settings

	// Ops holds kraftd's own operation keys (metrics listener, readiness).
	Ops OpsSettings
	// Authorizer holds authorizer.class.name, super.users and
	// allow.everyone.if.no.acl.found.
	Authorizer AuthorizerSettings

	// Tokens is the delegation.token.* keys (config_tokens.go).
	Tokens TokenConfig
	// Unknown lists keys kraftd does not use; start-up warns about each.
	Unknown []string
	// Static is the file as read, every key: a node describes its own
	// configuration from it as Apache describes its server.properties.
	Static map[string]string
	// Read holds every key kraftd looks up, set in the file or not.
	Read map[string]bool
}

// sslListeners names the listeners that serve TLS (SSL and SASL_SSL), in
// listener order.
func (c *Config) sslListeners() []string {
	var out []string
	for _, l := range c.Listeners {
		if p := c.ListenerProtocols[l.Name]; p == "SSL" || p == "SASL_SSL" {
			out = append(out, l.Name)
		}
	}
	return out
}

// LoadTLS reads the keystore and truststore of every SSL listener, so
// that a missing or unreadable store stops start-up naming its key (a
// *ConfigError) before anything is served. log receives, from then on,
// which certificate each listener serves.
func (c *Config) LoadTLS(log zerolog.Logger) error {
	c.tlsMaterial = map[string]*kraftdtls.Material{}
	for _, name := range c.sslListeners() {
		m, err := kraftdtls.NewMaterial(c.TLS[name], log)
		if err != nil {
			return keyConfigError(err)
		}
		c.tlsMaterial[name] = m
	}
	return nil
}

// listenerTLS is an SSL listener's loaded material; ok is false for a
// PLAINTEXT listener. An SSL listener whose stores were never loaded is
// an error, never a plaintext fallback.
func (c *Config) listenerTLS(name string) (m *kraftdtls.Material, ok bool, err error) {
	if p := c.ListenerProtocols[name]; p != "SSL" && p != "SASL_SSL" {
		return nil, false, nil
	}
	if m = c.tlsMaterial[name]; m == nil {
		return nil, true, fmt.Errorf("listener %s is SSL, but its keystore was not loaded (Config.LoadTLS)", name)
	}
	return m, true, nil
}

// saslSSLClientAuth applies Apache's rule that a SASL_SSL listener asks
// for client certificates only when its listener-prefixed ssl.client.auth
// says so. Apache warns and ignores a top-level value other than none;
// kraftd refuses it, so that a client certificate the operator thinks is
// required is never silently not asked for.
func (p *parser) saslSSLClientAuth(t *kraftdtls.Settings) {
	if t.Key("ssl.client.auth") != "ssl.client.auth" {
		return
	}
	if v := strings.TrimSpace(p.props["ssl.client.auth"]); v != "" && !strings.EqualFold(v, "none") {
		p.setErr("ssl.client.auth", fmt.Errorf("applies only to SSL listeners, as in Apache; set listener.name.%s.ssl.client.auth "+
			"to ask SASL_SSL listener %s for client certificates", strings.ToLower(t.Listener), t.Listener))
	}
	t.ClientAuth = tls.NoClientCert
}

// StaticVoters is controller.quorum.voters as the quorum core names voters:
// each on the controller listener. Empty for a dynamic quorum.
func (c *Config) StaticVoters() map[int32][]quorum.Endpoint {
	if len(c.Voters) == 0 {
		return nil
	}
	out := map[int32][]quorum.Endpoint{}
	for _, v := range c.Voters {
		out[v.ID] = []quorum.Endpoint{{Name: c.ControllerListenerName[0], Host: v.Host, Port: v.Port}}
	}
	return out
}

// ConfigError names the offending key, so start-up can say exactly what to fix.
type ConfigError struct {
	Key string
	Err error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config %s: %v", e.Key, e.Err) }

// ParseConfig validates props into a Config. Every error is a *ConfigError.
func ParseConfig(props map[string]string) (*Config, error) {
	c := &Config{Static: maps.Clone(props)}
	p := parser{props: props, used: map[string]bool{}}

	if roles := p.str("process.roles", ""); roles != "controller" {
		return nil, p.fail("process.roles", fmt.Errorf("%q: kraftd runs only as a controller (process.roles=controller)", roles))
	}
	c.NodeID = p.int32Req("node.id", 0)
	c.Voters = p.voters("controller.quorum.voters")
	c.BootstrapServers = p.list("controller.quorum.bootstrap.servers")
	for _, s := range c.BootstrapServers {
		if _, _, err := SplitHostPort(s); err != nil {
			p.setErr("controller.quorum.bootstrap.servers", err)
		}
	}
	c.ControllerListenerName = p.list("controller.listener.names")
	if len(c.ControllerListenerName) == 0 {
		p.setErr("controller.listener.names", errors.New("is required for a controller"))
	}
	c.Listeners = p.endpoints("listeners")
	c.AdvertisedListeners = p.endpoints("advertised.listeners")
	if len(c.AdvertisedListeners) == 0 {
		c.AdvertisedListeners = c.Listeners
	}
	c.ListenerProtocols = p.securityProtocols(c.ControllerListenerName, c.Listeners)
	if p.err != nil {
		return nil, p.err
	}
	if err := refuseSecurity(props, c.sslListeners(), c.saslListeners()); err != nil {
		return nil, err
	}
	for _, name := range c.saslListeners() {
		if c.SASL == nil {
			c.SASL = map[string]*sasl.Settings{}
		}
		c.SASL[name] = p.saslSettings(name)
		if len(c.ControllerListenerName) > 0 && name == c.ControllerListenerName[0] && p.err == nil {
			c.SASL[name].Client = p.saslClient(name, c.SASL[name].Mechanisms)
		}
	}
	for _, name := range c.sslListeners() {
		if c.TLS == nil {
			c.TLS = map[string]*kraftdtls.Settings{}
		}
		c.TLS[name] = p.tlsSettings(name)
		if c.ListenerProtocols[name] == "SASL_SSL" {
			p.saslSSLClientAuth(c.TLS[name])
		}
	}
	for _, name := range c.ControllerListenerName {
		if !slices.ContainsFunc(c.Listeners, func(e Endpoint) bool { return e.Name == name }) {
			p.setErr("listeners", fmt.Errorf("has no listener named %s from controller.listener.names", name))
		}
	}
	c.LogDirs = p.list("log.dirs")
	if len(c.LogDirs) == 0 {
		c.LogDirs = p.list("log.dir")
	}
	c.MetadataLogDir = p.str("metadata.log.dir", "")
	if c.MetadataLogDir == "" {
		if len(c.LogDirs) == 0 {
			p.setErr("metadata.log.dir", errors.New("neither metadata.log.dir nor log.dirs is set"))
		} else {
			c.MetadataLogDir = c.LogDirs[0]
		}
	}
	if len(c.Voters) > 0 && len(c.BootstrapServers) > 0 {
		p.setErr("controller.quorum.bootstrap.servers", errors.New("cannot be set together with controller.quorum.voters"))
	}
	p.checkOwnVoter(c)

	c.ElectionTimeoutMs = int(p.long("controller.quorum.election.timeout.ms", 1))
	c.FetchTimeoutMs = int(p.long("controller.quorum.fetch.timeout.ms", 1))
	c.ElectionBackoffMaxMs = int(p.long("controller.quorum.election.backoff.max.ms", 0))
	p.silenceSettings(c)
	c.RequestTimeoutMs = int(p.long("controller.quorum.request.timeout.ms", 1))
	c.RetryBackoffMs = int(p.long("controller.quorum.retry.backoff.ms", 0))
	// kraftd has no fixed linger (it group-commits), so the key is accepted and unused.
	p.long("controller.quorum.append.linger.ms", 0)
	c.MaxFrameSize = int32(p.long("socket.request.max.bytes", 1))
	p.connectionLimits(c)
	c.SegmentBytes = p.long("metadata.log.segment.bytes", 12)
	c.SegmentMs = p.long("metadata.log.segment.ms", 1)
	c.MaxRetentionBytes = p.long("metadata.max.retention.bytes", -1)
	c.MaxRetentionMs = p.long("metadata.max.retention.ms", -1)
	c.SnapshotBytes = p.long("metadata.log.max.record.bytes.between.snapshots", 1)
	c.SnapshotIntervalMs = p.long("metadata.log.max.snapshot.interval.ms", 0)
	switch v := p.str(snapshotCompressionKey, kraftdDefault(snapshotCompressionKey)); v {
	case "gzip", "none":
		c.SnapshotGzip = v == "gzip"
	default:
		p.setErr(snapshotCompressionKey, fmt.Errorf("%q is not gzip or none", v))
	}
	c.IdleIntervalMs = int(p.long("metadata.max.idle.interval.ms", 0))
	c.BrokerSessionTimeoutMs = int(p.long("broker.session.timeout.ms", 1))
	c.BrokerHeartbeatMs = int(p.long("broker.heartbeat.interval.ms", 1))

	c.NumPartitions = int32(p.long("num.partitions", 1))
	c.DefaultReplicationFactor = int16(p.long("default.replication.factor", 1))
	c.AutoJoin = p.boolean("controller.quorum.auto.join.enable")
	c.UncleanLeaderElection = p.boolean("unclean.leader.election.enable")
	c.AutoLeaderRebalance = p.boolean("auto.leader.rebalance.enable")
	c.LeaderImbalanceCheckS = int(p.long("leader.imbalance.check.interval.seconds", 1))
	c.Ops = p.opsSettings()
	c.Authorizer = p.authorizerSettings()
	c.Tokens = p.tokenConfig()

	if p.err != nil {
		return nil, p.err
	}
	c.Read = p.used
	for k := range props {
		if !p.used[k] {
			c.Unknown = append(c.Unknown, k)
		}
	}
	sort.Strings(c.Unknown)
	for _, k := range c.Unknown {
		if strings.HasPrefix(k, "kraftd.") {
			// kraftd's own namespace: a misspelt key would otherwise
			// leave, say, the metrics listener off with only a warning.
			return nil, &ConfigError{Key: k, Err: fmt.Errorf("is not a kraftd key (known: %s)", strings.Join(kafkaconfig.KraftdKeys(), ", "))}
		}
	}
	return c, nil
}

// connectionLimits reads the keys that bound what clients may hold. The
// connection keys keep Apache's defaults; the queue keys have kraftd's own
// (see Config), because Apache's leave the queued bytes unbounded.
func (p *parser) connectionLimits(c *Config) {
	c.MaxConnections = p.integer("max.connections", 1)
	c.MaxConnectionsPerIP = p.integer("max.connections.per.ip", 1)
	c.ConnMaxIdleMs = p.long("connections.max.idle.ms", 1)
	c.FailedAuthDelayMs = p.long("connection.failed.authentication.delay.ms", 0)
	c.MaxFailedAuthPerAddress = p.integer(maxFailedPerAddressKey, 0)
	c.MaxFailedAuthPerPrincipal = p.integer(maxFailedPerPrincipalKey, 0)
	c.QueuedMaxRequests = p.integer("queued.max.requests", 1)
	// Apache's default is -1 (unbounded); kraftd's keeps what hostile
	// connections can make the node hold to 64 MiB, at the cost of
	// refusing bulk frames over a twentieth of it (decodeFactor).
	c.QueuedMaxRequestBytes = p.long("queued.max.request.bytes", -1)
	if v := c.QueuedMaxRequestBytes; v != -1 && v < minMemoryBudget {
		p.setErr("queued.max.request.bytes", fmt.Errorf("%d is neither -1 (unbounded) nor at least %d, the charge of the largest request that is not a bulk request", v, minMemoryBudget))
	}
}

// ControllerEndpoints returns the advertised endpoints of the controller
// listeners, in controller.listener.names order.
func (c *Config) ControllerEndpoints() []Endpoint {
	var out []Endpoint
	for _, name := range c.ControllerListenerName {
		for _, e := range c.AdvertisedListeners {
			if e.Name == name {
				out = append(out, e)
			}
		}
	}
	return out
}

type parser struct {
	props map[string]string
	used  map[string]bool
	err   error
}

func (p *parser) setErr(key string, err error) {
	if p.err == nil {
		p.err = &ConfigError{Key: key, Err: err}
	}
}

// snapshotCompressionKey is kraftd's own: gzip (the default) or none for
// the data batches of the node's snapshots.
const snapshotCompressionKey = "kraftd.metadata.snapshot.compression.type"

func (p *parser) fail(key string, err error) error {
	p.setErr(key, err)
	return p.err
}

func (p *parser) str(key, def string) string {
	p.used[key] = true
	if v, ok := p.props[key]; ok {
		return strings.TrimSpace(v)
	}
	return def
}

func (p *parser) list(key string) []string {
	var out []string
	for _, s := range strings.Split(p.str(key, ""), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) int64(key string, def, min int64) int64 {
	s := p.str(key, "")
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.setErr(key, fmt.Errorf("%q is not an integer", s))
		return def
	}
	if v < min {
		p.setErr(key, fmt.Errorf("%d is below the minimum %d", v, min))
		return def
	}
	return v
}

// int32 is int64 for keys Apache declares as int.
func (p *parser) int32(key string, def, min int64) int {
	v := p.int64(key, def, min)
	if v > 1<<31-1 {
		p.setErr(key, fmt.Errorf("%d does not fit in 32 bits", v))
		return int(def)
	}
	return int(v)
}

func (p *parser) bool(key string, def bool) bool {
	switch s := strings.ToLower(p.str(key, "")); s {
	case "":
		return def
	case "true":
		return true
	case "false":
		return false
	default:
		p.setErr(key, fmt.Errorf("%q is neither true nor false", s))
		return def
	}
}

// long, integer and boolean are int64, int32 and bool with key's default
// from package kafkaconfig, where every default kraftd applies is kept.
func (p *parser) long(key string, min int64) int64 {
	return p.int64(key, kafkaconfig.DefaultInt(key), min)
}

func (p *parser) integer(key string, min int64) int {
	return p.int32(key, kafkaconfig.DefaultInt(key), min)
}

func (p *parser) boolean(key string) bool { return p.bool(key, kafkaconfig.DefaultBool(key)) }

// kraftdDefault is a string key's default from package kafkaconfig.
func kraftdDefault(key string) string {
	v, _ := kafkaconfig.Default(key)
	return v
}

func (p *parser) int32Req(key string, min int64) int32 {
	if p.str(key, "") == "" {
		p.setErr(key, errors.New("is required"))
		return -1
	}
	v := p.int64(key, -1, min)
	if v > 1<<31-1 {
		p.setErr(key, fmt.Errorf("%d does not fit in 32 bits", v))
	}
	return int32(v)
}

func (p *parser) voters(key string) []Voter {
	var out []Voter
	for _, s := range p.list(key) {
		id, addr, ok := strings.Cut(s, "@")
		n, err := strconv.ParseInt(id, 10, 32)
		if !ok || err != nil || n < 0 {
			p.setErr(key, fmt.Errorf("%q is not id@host:port", s))
			continue
		}
		host, port, err := SplitHostPort(addr)
		if err != nil {
			p.setErr(key, fmt.Errorf("%q: %v", s, err))
			continue
		}
		if slices.ContainsFunc(out, func(v Voter) bool { return v.ID == int32(n) }) {
			p.setErr(key, fmt.Errorf("voter %d is listed twice", n))
		}
		out = append(out, Voter{ID: int32(n), Host: host, Port: port})
	}
	return out
}

func (p *parser) endpoints(key string) []Endpoint {
	var out []Endpoint
	for _, s := range p.list(key) {
		name, addr, ok := strings.Cut(s, "://")
		if !ok || name == "" {
			p.setErr(key, fmt.Errorf("%q is not NAME://host:port", s))
			continue
		}
		host, port, err := SplitHostPort(addr)
		if err != nil {
			p.setErr(key, fmt.Errorf("%q: %v", s, err))
			continue
		}
		out = append(out, Endpoint{Name: strings.ToUpper(name), Host: host, Port: port})
	}
	return out
}

// securityProtocols reads listener.security.protocol.map for the
// listeners. Apache maps a controller listener missing from a defaulted
// map to PLAINTEXT.
func (p *parser) securityProtocols(controllerNames []string, listeners []Endpoint) map[string]string {
	const key = "listener.security.protocol.map"
	m := map[string]string{"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL"}
	explicit := p.str(key, "") != ""
	if explicit {
		m = map[string]string{}
		for _, s := range p.list(key) {
			name, proto, ok := strings.Cut(s, ":")
			if !ok {
				p.setErr(key, fmt.Errorf("%q is not NAME:PROTOCOL", s))
				return nil
			}
			m[strings.ToUpper(strings.TrimSpace(name))] = strings.ToUpper(strings.TrimSpace(proto))
		}
	} else {
		for _, n := range controllerNames {
			if _, ok := m[n]; !ok {
				m[n] = "PLAINTEXT"
			}
		}
	}
	out := map[string]string{}
	for _, l := range listeners {
		proto, ok := m[l.Name]
		switch {
		case !ok:
			p.setErr(key, fmt.Errorf("has no security protocol for listener %s", l.Name))
		case proto != "PLAINTEXT" && proto != "SSL" && proto != "SASL_PLAINTEXT" && proto != "SASL_SSL":
			p.setErr(key, fmt.Errorf("listener %s uses %s, which is no security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)", l.Name, proto))
		}
		out[l.Name] = proto
	}
	return out
}

// SplitHostPort splits host:port, with a port from 0 to 65535.
func SplitHostPort(s string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return host, uint16(n), nil
}
