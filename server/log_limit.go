package server

// log_limit.go: the security log lines a stranger can cause at will (a
// failed TLS handshake, plaintext sent to a TLS port, a failed or refused
// login, a connection over max.connections) pass through a limiter, so a
// flood of bad connections costs a bounded number of log lines. Each kind
// of line may be written logBurst times in a window of logWindow; the
// rest are counted, and when the window ends one line says how many were
// suppressed. The kinds are a fixed set of constants (never a peer's
// address), so the limiter's memory does not grow with the flood.

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

const (
	// logBurst lines of one kind are written in a window; enough to show
	// an operator the peers and reasons of a burst.
	logBurst = 20
	// logWindow is how long a window lasts from its first line.
	logWindow = 10 * time.Second
)

// Kinds of security log lines, each limited on its own.
const (
	logKindTLS       = "TLS handshake failures"
	logKindSASL      = "failed SASL authentications"
	logKindSASLLimit = "SASL authentications refused for too many failures"
	logKindRefused   = "connections refused over max.connections"
)

// logLimiter passes at most burst lines of a kind per window and reports
// the suppressed ones at the window's end.
type logLimiter struct {
	log    zerolog.Logger
	burst  int
	window time.Duration

	mu     sync.Mutex
	kinds  map[string]*logWindowState
	closed bool
}

type logWindowState struct {
	start      time.Time
	passed     int
	suppressed int
	timer      *time.Timer
}

func newLogLimiter(log zerolog.Logger, burst int, window time.Duration) *logLimiter {
	return &logLimiter{log: log, burst: burst, window: window, kinds: map[string]*logWindowState{}}
}

// allow reports whether a line of kind may be written now; when it may
// not, the line is counted for the window's summary.
func (l *logLimiter) allow(kind string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.kinds[kind]
	if w == nil || (w.suppressed == 0 && time.Since(w.start) >= l.window) {
		w = &logWindowState{start: time.Now()}
		l.kinds[kind] = w
	}
	if w.passed < l.burst {
		w.passed++
		return true
	}
	w.suppressed++
	if w.timer == nil && !l.closed {
		// The summary comes at the window's end even if the flood stops,
		// so the count is never lost to a quiet period.
		w.timer = time.AfterFunc(time.Until(w.start.Add(l.window)), func() { l.summarize(kind) })
	}
	return false
}

// summarize ends kind's window, writing how many lines it suppressed.
func (l *logLimiter) summarize(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.kinds[kind]
	if w == nil {
		return
	}
	delete(l.kinds, kind)
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.suppressed > 0 {
		l.log.Warn().Str("kind", kind).Int("suppressed", w.suppressed).Int("written", w.passed).
			Dur("window_ms", time.Since(w.start).Round(time.Millisecond)).
			Msgf("suppressed %d log lines of %s in the last %v", w.suppressed, kind, time.Since(w.start).Round(time.Second))
	}
}

// close writes the summaries still pending, so a stopping node does not
// lose its counts, and arms no more timers.
func (l *logLimiter) close() {
	l.mu.Lock()
	l.closed = true
	kinds := make([]string, 0, len(l.kinds))
	for k := range l.kinds {
		kinds = append(kinds, k)
	}
	l.mu.Unlock()
	for _, k := range kinds {
		l.summarize(k)
	}
}
