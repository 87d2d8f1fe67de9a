package kit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FetchKafka into an empty cache runs Maven (make test's `make kafka` has
// filled Maven's own repository, so this copies rather than downloads),
// says what it fetches and how long it took, and leaves the layout
// `make kafka` leaves; a second call finds it and says nothing.
func TestFetchKafkaIntoEmptyCache(t *testing.T) {
	t.Setenv(CacheEnv, t.TempDir())
	var said []string
	logf := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	dir, err := FetchKafka(context.Background(), "4.4.0", logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(said) != 2 || !strings.Contains(said[0], "fetching Apache Kafka 4.4.0") || !strings.Contains(said[1], "jars in") {
		t.Fatalf("FetchKafka said %q", said)
	}
	t.Log(said[1])
	for _, f := range []string{".complete", "libs/kafka_2.13-4.4.0.jar", "libs/kafka-tools-4.4.0.jar"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	said = nil
	if again, err := FetchKafka(context.Background(), "4.4.0", logf); err != nil || again != dir || len(said) != 0 {
		t.Fatalf("second FetchKafka: %q, %v, said %q", again, err, said)
	}
}

// Versions outside the lines the kit runs are refused before any fetch.
func TestFetchKafkaRefusesVersions(t *testing.T) {
	for _, v := range []string{"3.8.1", "5.0.0", "4.4", "latest", "../4.4.0"} {
		if _, err := FetchKafka(context.Background(), v, nil); err == nil {
			t.Errorf("FetchKafka(%q) succeeded", v)
		}
	}
}
