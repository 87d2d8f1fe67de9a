package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// ServeOptions say what the metrics listener serves beyond /metrics,
// /healthz and /readyz.
type ServeOptions struct {
	// Pprof serves net/http/pprof under /debug/pprof/
	// (kraftd.metrics.pprof.enable).
	Pprof  bool
	Bounds ReadyBounds
	// Limits bound what clients of the listener may hold; zero fields take
	// DefaultHTTPLimits' values.
	Limits HTTPLimits
}

// HTTPLimits bound the metrics listener's clients, so that connections
// to it (a scraper that never closes its keep-alive connections, or an
// attacker) cannot hold memory or the file descriptors the Kafka
// listeners need.
type HTTPLimits struct {
	// MaxConnections is how many connections are served at once; more wait
	// in the kernel's accept queue, costing this process nothing, until
	// one closes.
	MaxConnections int
	// ReadHeader, Read and Write bound reading a request's header, a whole
	// request, and writing its answer (a CPU profile must fit in it: pprof
	// refuses a longer one).
	ReadHeader, Read, Write time.Duration
	// Idle is how long a keep-alive connection may wait for its next
	// request.
	Idle time.Duration
}

// DefaultHTTPLimits: a few scrapers need a few connections each, and a
// scrape interval is at most a minute or so.
var DefaultHTTPLimits = HTTPLimits{MaxConnections: 64, ReadHeader: 10 * time.Second, Read: 30 * time.Second,
	Write: 2 * time.Minute, Idle: time.Minute}

// orDefaults fills zero fields from DefaultHTTPLimits.
func (l HTTPLimits) orDefaults() HTTPLimits {
	d := DefaultHTTPLimits
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = d.MaxConnections
	}
	l.ReadHeader, l.Read, l.Write, l.Idle = pick(l.ReadHeader, d.ReadHeader), pick(l.Read, d.Read), pick(l.Write, d.Write), pick(l.Idle, d.Idle)
	return l
}

// Listener is the running metrics listener.
type Listener struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// Serve binds addr (host:port) and serves /metrics from the registry, with
// the Apache-named metrics read from src at each scrape, /healthz and
// /readyz, and pprof if asked. It returns once the address is bound.
func (m *Metrics) Serve(addr string, src Source, opts ServeOptions, log zerolog.Logger) (*Listener, error) {
	ready := func() Readiness {
		st := src.Status()
		r := judgeReadiness(src.NodeID(), st, src.Applied(), m.now().UnixMilli(), opts.Bounds)
		return withPeerProblems(r, st, src.PeerClusterMismatches(), src.UnresolvedPeers())
	}
	m.reg.MustRegister(&collector{m: m, src: src, ready: ready})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true, Registry: m.reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"healthy": true, "node_id": src.NodeID(), "reason": "the process serves"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := ready()
		code := http.StatusOK
		if !r.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, r)
	})
	if opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	lim := opts.Limits.orDefaults()
	l := &Listener{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: lim.ReadHeader, ReadTimeout: lim.Read,
			WriteTimeout: lim.Write, IdleTimeout: lim.Idle, MaxHeaderBytes: 64 << 10},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	log.Info().Str("addr", ln.Addr().String()).Bool("pprof", opts.Pprof).Int("max_connections", lim.MaxConnections).
		Msg("serving metrics, /healthz and /readyz")
	go func() {
		defer close(l.done)
		if err := l.srv.Serve(limitListener(ln, lim.MaxConnections)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics listener stopped")
		}
	}()
	return l, nil
}

// Addr is the bound address (useful with port 0).
func (l *Listener) Addr() net.Addr { return l.addr }

// Close stops the listener and waits for it.
func (l *Listener) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if l.srv.Shutdown(ctx) != nil {
		l.srv.Close()
	}
	<-l.done
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
