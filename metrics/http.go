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
		return judgeReadiness(src.NodeID(), src.Status(), src.Applied(), m.now().UnixMilli(), opts.Bounds)
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
	l := &Listener{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	log.Info().Str("addr", ln.Addr().String()).Bool("pprof", opts.Pprof).Msg("serving metrics, /healthz and /readyz")
	go func() {
		defer close(l.done)
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
