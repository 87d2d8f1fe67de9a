package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/storage"
)

// TestImageEntryPoint checks kraftd image's refusals and the configuration
// it writes, without a container (compat.TestImageQuorumWithApacheBroker
// runs it in one).
func TestImageEntryPoint(t *testing.T) {
	bin := kraftdBinary(t)
	if out, code := run(t, bin, "image", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://a:9092"); code != 2 ||
		!strings.Contains(out, "KAFKA_ADVERTISED_LISTENERS is not supported on a KRaft controller") {
		t.Errorf("advertised listeners on a controller: exit %d: %s", code, out)
	}
	if out, code := run(t, bin, "image", "not-an-assignment"); code != 2 || !strings.Contains(out, "NAME=value") {
		t.Errorf("a bad argument: exit %d: %s", code, out)
	}

	dir := t.TempDir()
	mounted, final, data := filepath.Join(dir, "mnt"), filepath.Join(dir, "final", "server.properties"), filepath.Join(dir, "data")
	os.Mkdir(mounted, 0o755)
	if err := os.WriteFile(filepath.Join(mounted, "server.properties"), []byte("node.id=7\nprocess.roles=controller\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An unusable voter makes start's configuration check fail (exit 2)
	// after the merged file is written and before anything is formatted.
	out, code := run(t, bin, "image", "--mounted-config-dir", mounted, "--final-config", final, "--data-dir", data,
		"KAFKA_NODE_ID=3", "KAFKA_CONTROLLER_QUORUM_VOTERS=3@127.0.0.1:notaport", "KAFKA_HEAP_OPTS=-Xmx1G",
		"KAFKA_LISTENER_NAME_CONTROLLER_SCRAM__SHA__256_SASL___JAAS___CONFIG=x")
	if code != 2 || !strings.Contains(out, "controller.quorum.voters") {
		t.Fatalf("a bad voter: exit %d: %s", code, out)
	}
	b, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	props := storage.ParseJavaProperties(string(b))
	want := map[string]string{"node.id": "3", "process.roles": "controller", "log.dirs": data,
		"controller.quorum.voters": "3@127.0.0.1:notaport", "listener.name.controller.scram_sha_256.sasl-jaas-config": "x"}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q; the file:\n%s", k, props[k], v, b)
		}
	}
	if len(props) != len(want) {
		t.Errorf("the file has %d keys, want %d:\n%s", len(props), len(want), b)
	}
	if _, err := os.Stat(filepath.Join(data, "meta.properties")); err == nil {
		t.Errorf("a configuration error formatted the data directory")
	}
}
