package compat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SimFleet is many simulated brokers against one controller quorum, sharing
// a controller locator, a metadata watcher and a heartbeat latency recorder.
type SimFleet struct {
	ClusterID string
	Brokers   []*SimBroker
	// FeatureSummary says what ApiVersions finalized and what the brokers
	// register as supported, for the benchmark's log.
	FeatureSummary string

	locator    *ControllerLocator
	watcher    *MetadataWatcher
	features   []kmsg.BrokerRegistrationRequestFeature
	heartbeats *LatencyRecorder
	unfenced   atomic.Int64

	cancel context.CancelFunc
	done   sync.WaitGroup

	errMu  sync.Mutex
	phase  string
	errors map[string]int // "phase API: error" -> count
}

// StartSimFleet starts count simulated brokers with ids firstID,
// firstID+1, ... against the quorum whose voters are given (node id ->
// CONTROLLER address). It reads the finalized features from the active
// controller's ApiVersions first, since every broker must support them to
// register. Stop ends them.
func StartSimFleet(clusterID string, voters map[int32]string, firstID int32, count int) (*SimFleet, error) {
	return StartSimFleetWith(clusterID, voters, firstID, count, SimFleetOptions{})
}

// SimFleetOptions are what some benchmarks add to a fleet.
type SimFleetOptions struct {
	// Rack names broker i's rack (0-based); nil registers no racks.
	Rack func(i int) string
	// Leaders, when set, is fed every batch the fleet's watcher fetches, so
	// that it knows who leads each partition.
	Leaders *LeaderTracker
	// Features, when set, are the feature ranges every broker registers
	// with, instead of those the active controller lists: a benchmark
	// comparing two controllers gives both the same, so that their
	// RegisterBrokerRecords are the same size.
	Features []kmsg.BrokerRegistrationRequestFeature
}

// StartSimFleetWith is StartSimFleet with options.
func StartSimFleetWith(clusterID string, voters map[int32]string, firstID int32, count int, opts SimFleetOptions) (*SimFleet, error) {
	if err := checkFleetIDs(voters, firstID, count); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &SimFleet{ClusterID: clusterID, locator: NewControllerLocator(voters),
		heartbeats: &LatencyRecorder{}, cancel: cancel, phase: "start", errors: map[string]int{}}
	lctx, lcancel := context.WithTimeout(ctx, ReadyTimeout)
	defer lcancel()
	addr, _, err := f.locator.Leader(lctx)
	if err != nil {
		cancel()
		return nil, errorf("no active controller among %v: %w", slices.Collect(maps.Values(voters)), err)
	}
	if f.features, f.FeatureSummary, err = registrationFeatures(addr); err != nil {
		cancel()
		return nil, err
	}
	if opts.Features != nil {
		f.features = opts.Features
	}
	f.FeatureSummary += "; brokers register with " + featureRanges(f.features)
	// The watcher fetches as the first broker, as that broker's raft
	// client would.
	f.watcher = NewMetadataWatcher(firstID, clusterID, f.locator)
	f.watcher.leaders = opts.Leaders
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		f.watcher.Run(ctx)
	}()
	for i := range count {
		b, err := newSimBroker(f, firstID+int32(i))
		if err != nil {
			f.Stop()
			return nil, err
		}
		if opts.Rack != nil {
			b.Rack = opts.Rack(i)
		}
		f.Brokers = append(f.Brokers, b)
	}
	for _, b := range f.Brokers {
		f.done.Add(1)
		bctx, kill := context.WithCancel(ctx)
		b.kill = kill
		go func() {
			defer f.done.Done()
			defer kill()
			b.run(bctx)
		}()
	}
	return f, nil
}

// errFleetIDIsVoter: a simulated broker (and the fleet's watcher, which
// fetches as the first one) would use a controller voter's node id.
var errFleetIDIsVoter = errors.New("simulated broker id is a controller voter's node id")

// checkFleetIDs refuses broker ids that are voter ids, as Apache refuses a
// broker-only node.id listed in controller.quorum.voters. Under a static
// voter set the leader knows a voter by its id alone, so the watcher's
// fetches would count as that voter's toward the high watermark: records
// would commit on the leader's disk and the watcher's memory, and a leader
// kill could lose acknowledged writes (TestChaosKraftdQuorum did, once).
func checkFleetIDs(voters map[int32]string, firstID int32, count int) error {
	for id := range voters {
		if id >= firstID && int64(id) < int64(firstID)+int64(count) {
			return fmt.Errorf("%w: broker %d (fleet ids %d-%d)", errFleetIDIsVoter, id, firstID, int64(firstID)+int64(count)-1)
		}
	}
	return nil
}

// registrationFeatures reads ApiVersions v4 from addr and returns the
// feature ranges a broker registers with: every range the controller
// supports, as a broker of the same release supports the same ones, widened
// to take in any finalized level outside it. Supported ranges rather than
// just the finalized levels, because a newly elected Apache controller
// answers ApiVersions before it has loaded every finalized feature (it
// listed group.version only later, and then refused brokers lacking it).
func registrationFeatures(addr string) ([]kmsg.BrokerRegistrationRequestFeature, string, error) {
	r, err := Request(addr, simApiVersionsRequest())
	if err != nil {
		return nil, "", err
	}
	resp := r.(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		return nil, "", errorf("ApiVersions from %s: error code %d", addr, resp.ErrorCode)
	}
	var finalized []string
	for _, fin := range resp.FinalizedFeatures {
		finalized = append(finalized, fmt.Sprintf("%s=%d", fin.Name, fin.MaxVersionLevel))
	}
	ranges := map[string][2]int16{}
	for _, s := range resp.SupportedFeatures {
		ranges[s.Name] = [2]int16{s.MinVersion, s.MaxVersion}
	}
	for _, fin := range resp.FinalizedFeatures {
		level := fin.MaxVersionLevel
		r, ok := ranges[fin.Name]
		if !ok {
			r = [2]int16{level, level}
		}
		ranges[fin.Name] = [2]int16{min(r[0], level), max(r[1], level)}
	}
	if _, ok := ranges["metadata.version"]; !ok {
		return nil, "", errorf("ApiVersions from %s lists no metadata.version: %v %v", addr, resp.SupportedFeatures, resp.FinalizedFeatures)
	}
	var out []kmsg.BrokerRegistrationRequestFeature
	for _, name := range slices.Sorted(maps.Keys(ranges)) {
		r := ranges[name]
		out = append(out, kmsg.BrokerRegistrationRequestFeature{Name: name, MinSupportedVersion: r[0], MaxSupportedVersion: r[1]})
	}
	summary := fmt.Sprintf("finalized [%s] at epoch %d; the controller lists %s", strings.Join(finalized, " "), resp.FinalizedFeaturesEpoch, featureRanges(out))
	return out, summary, nil
}

func featureRanges(features []kmsg.BrokerRegistrationRequestFeature) string {
	var out []string
	for _, f := range features {
		out = append(out, fmt.Sprintf("%s %d-%d", f.Name, f.MinSupportedVersion, f.MaxSupportedVersion))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// Features are the feature ranges the fleet's brokers register with.
func (f *SimFleet) Features() []kmsg.BrokerRegistrationRequestFeature { return f.features }

// WaitUnfenced waits until every broker of the fleet is registered and
// unfenced, and returns how long that took from the call.
func (f *SimFleet) WaitUnfenced(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for int(f.unfenced.Load()) < len(f.Brokers) {
		if time.Since(start) > timeout {
			return 0, errorf("%d of %d simulated brokers unfenced after %v; errors: %s",
				f.unfenced.Load(), len(f.Brokers), timeout, f.Errors())
		}
		time.Sleep(PollInterval)
	}
	return time.Since(start), nil
}

// Heartbeats is the latency recorder of running brokers' heartbeats.
func (f *SimFleet) Heartbeats() *LatencyRecorder { return f.heartbeats }

// Locator is the fleet's view of the active controller.
func (f *SimFleet) Locator() *ControllerLocator { return f.locator }

// Watcher is the fleet's metadata log observer.
func (f *SimFleet) Watcher() *MetadataWatcher { return f.watcher }

// Stop ends every broker and the watcher and waits for them.
func (f *SimFleet) Stop() {
	f.cancel()
	f.done.Wait()
}

// SetPhase labels the errors counted from now on, so a report can tell
// start-up errors from those met while measuring.
func (f *SimFleet) SetPhase(name string) {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	f.phase = name
}

func (f *SimFleet) countError(api string, err error) {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	f.errors[f.phase+" "+api+": "+errorClass(err)]++
}

// errorClass names an error without what differs between occurrences
// (addresses, ports), so that counts add up: a Kafka error by its name, a
// network error by its kind.
func errorClass(err error) string {
	var ke *kerr.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke):
		return ke.Message
	case errors.As(err, &ne) && ne.Timeout():
		return "i/o timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.As(err, &ne):
		return "network error"
	}
	return err.Error()
}

// Errors summarizes the errors brokers met, most frequent first ("none"
// when there were none).
func (f *SimFleet) Errors() string {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	if len(f.errors) == 0 {
		return "none"
	}
	keys := slices.SortedFunc(maps.Keys(f.errors), func(a, b string) int { return f.errors[b] - f.errors[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%dx %s", f.errors[k], k))
	}
	return strings.Join(parts, "; ")
}

// LatencyRecorder collects request latencies while recording is on.
type LatencyRecorder struct {
	mu        sync.Mutex
	recording bool
	samples   []time.Duration
}

// Start drops what was recorded and starts recording.
func (r *LatencyRecorder) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording, r.samples = true, nil
}

// Stop ends recording and returns the samples.
func (r *LatencyRecorder) Stop() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording = false
	return r.samples
}

// Add records one latency if recording is on.
func (r *LatencyRecorder) Add(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recording {
		r.samples = append(r.samples, d)
	}
}

// Percentile returns the q-quantile (0 < q <= 1) of samples by the
// nearest-rank method, or 0 for none.
func Percentile(samples []time.Duration, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(q*float64(len(s)) + 0.999999)
	return s[min(max(rank, 1), len(s))-1]
}
