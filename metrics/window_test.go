package metrics

import (
	"math"
	"testing"
	"time"
)

func TestWindowedStatistics(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := newWindowed(t0)
	if !math.IsNaN(w.avg(t0)) || !math.IsNaN(w.max(t0)) {
		t.Fatalf("empty statistic: avg %v max %v, want NaN as Apache's Avg and Max", w.avg(t0), w.max(t0))
	}
	w.record(2, t0.Add(time.Second))
	w.record(6, t0.Add(2*time.Second))
	if got := w.avg(t0.Add(3 * time.Second)); got != 4 {
		t.Errorf("avg = %v, want 4", got)
	}
	if got := w.max(t0.Add(3 * time.Second)); got != 6 {
		t.Errorf("max = %v, want 6", got)
	}
	// 8 in the first 30 s window: the rate is over at least one window.
	if got := w.rate(t0.Add(3 * time.Second)); got != 8.0/30 {
		t.Errorf("rate = %v, want %v", got, 8.0/30)
	}
	// A value in the second window; both samples are live.
	w.record(10, t0.Add(40*time.Second))
	if got := w.max(t0.Add(41 * time.Second)); got != 10 {
		t.Errorf("max = %v, want 10", got)
	}
	if got := w.rate(t0.Add(50 * time.Second)); got != 18.0/50 {
		t.Errorf("rate = %v, want %v", got, 18.0/50)
	}
	// The first sample ages out after two windows.
	if got := w.avg(t0.Add(61 * time.Second)); got != 10 {
		t.Errorf("avg after the first sample aged out = %v, want 10", got)
	}
	// Everything ages out.
	if got := w.avg(t0.Add(200 * time.Second)); !math.IsNaN(got) {
		t.Errorf("avg of aged-out samples = %v, want NaN", got)
	}
	if got := w.rate(t0.Add(200 * time.Second)); got != 0 {
		t.Errorf("rate of aged-out samples = %v, want 0", got)
	}
}
