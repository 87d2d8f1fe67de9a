package compat

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BrokerSet is a few Apache brokers (process.roles=broker) of one version
// sharing one controller quorum, however that quorum is made.
type BrokerSet struct {
	Version string
	Brokers []*ApacheBroker
}

// StartBrokers writes, formats and starts one Apache broker per id against
// the static quorum voters ("1@127.0.0.1:9093,..."), and waits until all of
// them are registered and unfenced. props override broker settings.
func StartBrokers(t testing.TB, version, voters, clusterID string, ids []int, props map[string]string) *BrokerSet {
	t.Helper()
	s := &BrokerSet{Version: version}
	for _, id := range ids {
		b := NewApacheBroker(t, version, id, voters, props)
		b.Format(t, clusterID)
		s.Brokers = append(s.Brokers, b)
	}
	for _, b := range s.Brokers {
		b.Start(t)
	}
	s.WaitUnfenced(t, s.IDs()...)
	return s
}

// IDs are the brokers' node ids.
func (s *BrokerSet) IDs() []int32 {
	var out []int32
	for _, b := range s.Brokers {
		out = append(out, int32(b.NodeID))
	}
	return out
}

// Addrs are the brokers' PLAINTEXT addresses, the clients' seeds.
func (s *BrokerSet) Addrs() []string {
	var out []string
	for _, b := range s.Brokers {
		out = append(out, b.Addr())
	}
	return out
}

// Broker returns the broker with node id id.
func (s *BrokerSet) Broker(id int32) *ApacheBroker {
	for _, b := range s.Brokers {
		if int32(b.NodeID) == id {
			return b
		}
	}
	return nil
}

// Metadata asks the first running broker for metadata on topics.
func (s *BrokerSet) Metadata(topics ...string) (*BrokerMetadata, error) {
	var last error
	for _, b := range s.Brokers {
		if b.Proc == nil {
			continue
		}
		if exited, _ := b.Proc.Exited(); exited {
			continue
		}
		m, err := Metadata(b.Addr(), topics...)
		if err == nil {
			return m, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no running broker answered Metadata: %v", last)
}

// WaitUnfenced waits until a running broker lists exactly the given brokers
// as alive (registered and unfenced).
func (s *BrokerSet) WaitUnfenced(t testing.TB, want ...int32) {
	t.Helper()
	s.waitUnfencedWithin(t, ReadyTimeout, nil, want...)
}

// waitUnfencedWithin is WaitUnfenced with its own bound, failing early if
// watch (when not nil) exits.
func (s *BrokerSet) waitUnfencedWithin(t testing.TB, bound time.Duration, watch *Process, want ...int32) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	Eventually(t, bound, fmt.Sprintf("brokers %v unfenced", want), watch, func() error {
		m, err := s.Metadata()
		if err != nil {
			return err
		}
		if !slices.Equal(m.Brokers, want) {
			return fmt.Errorf("brokers %v, want %v", m.Brokers, want)
		}
		return nil
	})
}

// WaitPartitions waits until every partition of topic passes check, which
// sees its leader and sorted ISR.
func (s *BrokerSet) WaitPartitions(t testing.TB, what, topic string, check func(p, leader int32, isr []int32) error) {
	t.Helper()
	Eventually(t, ReadyTimeout, what, nil, func() error {
		m, err := s.Metadata(topic)
		if err != nil {
			return err
		}
		if len(m.Leaders[topic]) == 0 {
			return fmt.Errorf("topic %s has no partitions", topic)
		}
		for p, leader := range m.Leaders[topic] {
			if err := check(p, leader, m.Isrs[topic][p]); err != nil {
				return fmt.Errorf("%s partition %d (leader %d, ISR %v): %w", topic, p, leader, m.Isrs[topic][p], err)
			}
		}
		return nil
	})
}

// LoggedRecord is one metadata record as `kraftd dump-log --json` prints it.
type LoggedRecord struct {
	Offset int64
	Type   string         // e.g. "PartitionChangeRecord"
	Fields map[string]any // lowerCamel field names, as Apache's JSON
}

// Int reads a numeric field (JSON numbers decode as float64).
func (r LoggedRecord) Int(field string) int64 {
	if v, ok := r.Fields[field].(float64); ok {
		return int64(v)
	}
	return 0
}

// Bool reads a boolean field.
func (r LoggedRecord) Bool(field string) bool {
	v, _ := r.Fields[field].(bool)
	return v
}

// String reads a string field.
func (r LoggedRecord) String(field string) string {
	v, _ := r.Fields[field].(string)
	return v
}

// DumpMetadataLog runs `kraftd dump-log --json` over the segments of a
// controller's metadata.log.dir and returns its data records (control
// records left out) in offset order. A live log is fine: a torn tail is
// reported by the tool, not failed on.
func DumpMetadataLog(t testing.TB, metadataDir string) []LoggedRecord {
	t.Helper()
	segments, err := filepath.Glob(filepath.Join(metadataDir, "__cluster_metadata-0", "*.log"))
	if err != nil || len(segments) == 0 {
		t.Fatalf("compat: no metadata log segments in %s (%v)", metadataDir, err)
	}
	slices.Sort(segments) // zero-padded base offsets sort by name
	out, err := exec.Command(KraftdBinary(t), append([]string{"dump-log", "--json"}, segments...)...).Output()
	if err != nil {
		t.Fatalf("compat: kraftd dump-log: %v", err)
	}
	var recs []LoggedRecord
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Offset  *int64         `json:"offset"`
			Control bool           `json:"control"`
			Type    string         `json:"type"`
			Record  map[string]any `json:"record"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("compat: kraftd dump-log printed %q: %v", sc.Text(), err)
		}
		if line.Offset == nil || line.Control {
			continue // a batch header, or a control record
		}
		recs = append(recs, LoggedRecord{Offset: *line.Offset, Type: line.Type, Fields: line.Record})
	}
	return recs
}
