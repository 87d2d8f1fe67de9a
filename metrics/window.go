package metrics

import (
	"math"
	"sync"
	"time"
)

// Apache's client metrics (the raft-metrics group) keep each statistic
// over metrics.num.samples = 2 samples of metrics.sample.window.ms = 30 s:
// a sample older than both windows is dropped, so an average or maximum
// covers the last 30 to 60 seconds, and a rate divides a windowed sum by
// the time those samples cover (at least one whole window). windowed keeps
// those statistics the same way, so the gauges read like Apache's.
const (
	sampleWindow = 30 * time.Second
	numSamples   = 2
)

type sample struct {
	start    time.Time
	count    int64
	sum, max float64
}

// windowed is one statistic's samples; safe for concurrent use.
type windowed struct {
	mu      sync.Mutex
	samples [numSamples]sample
	current int
}

func newWindowed(now time.Time) *windowed {
	w := &windowed{}
	w.samples[0].start = now
	return w
}

// record adds one value at now.
func (w *windowed) record(v float64, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.roll(now)
	if s.count == 0 || v > s.max {
		s.max = v
	}
	s.count++
	s.sum += v
}

// roll returns the sample now falls in, starting a new one once the
// current one is a window old.
func (w *windowed) roll(now time.Time) *sample {
	s := &w.samples[w.current]
	if now.Sub(s.start) < sampleWindow {
		return s
	}
	w.current = (w.current + 1) % numSamples
	s = &w.samples[w.current]
	*s = sample{start: now}
	return s
}

// live calls f for each sample not yet aged out at now.
func (w *windowed) live(now time.Time, f func(s *sample)) {
	for i := range w.samples {
		s := &w.samples[i]
		if !s.start.IsZero() && now.Sub(s.start) < numSamples*sampleWindow {
			f(s)
		}
	}
}

// avg is the mean of the values in the live samples, NaN when there are
// none (Apache's Avg).
func (w *windowed) avg(now time.Time) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sum float64
	var count int64
	w.live(now, func(s *sample) { sum += s.sum; count += s.count })
	if count == 0 {
		return math.NaN()
	}
	return sum / float64(count)
}

// max is the largest value in the live samples, NaN when there are none
// (Apache's Max).
func (w *windowed) max(now time.Time) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, seen := math.Inf(-1), false
	w.live(now, func(s *sample) {
		if s.count > 0 {
			m, seen = math.Max(m, s.max), true
		}
	})
	if !seen {
		return math.NaN()
	}
	return m
}

// rate is the sum of the live samples per second of the time they cover,
// at least one window (Apache's Rate over a WindowedSum).
func (w *windowed) rate(now time.Time) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sum float64
	oldest := now
	w.live(now, func(s *sample) {
		sum += s.sum
		if s.start.Before(oldest) {
			oldest = s.start
		}
	})
	elapsed := max(now.Sub(oldest), (numSamples-1)*sampleWindow)
	return sum / elapsed.Seconds()
}
