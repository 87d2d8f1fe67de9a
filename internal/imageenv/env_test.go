package imageenv

import (
	"strings"
	"testing"

	"github.com/kraftd/kraftd/storage"
)

// apacheRule is the mapping as Apache's KafkaDockerWrapper.getServerConfigsFromEnv
// writes it, step by step in its order, kept apart from Key so that the
// table checks Key against the rule and not against itself.
func apacheRule(name string) (string, bool) {
	if !strings.HasPrefix(name, "KAFKA_") || Excluded[name] {
		return "", false
	}
	s := strings.ReplaceAll(name, "KAFKA_", "")
	s = strings.ToLower(s)
	s = strings.ReplaceAll(s, "_", ".")
	s = strings.ReplaceAll(s, "...", "-")
	s = strings.ReplaceAll(s, "..", "_")
	return s, strings.TrimSpace(s) != ""
}

func TestKeyFollowsApacheRule(t *testing.T) {
	for _, tc := range []struct {
		env, want string // want "" means no property
	}{
		{"KAFKA_NODE_ID", "node.id"},
		{"KAFKA_PROCESS_ROLES", "process.roles"},
		{"KAFKA_CONTROLLER_QUORUM_VOTERS", "controller.quorum.voters"},
		{"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"},
		{"KAFKA_KRAFTD_METRICS_LISTENER", "kraftd.metrics.listener"},
		{"KAFKA_LISTENER_NAME_CONTROLLER_PLAIN_SASL___JAAS___CONFIG", "listener.name.controller.plain.sasl-jaas-config"},
		{"KAFKA_LISTENER_NAME_CONTROLLER_SCRAM__SHA__512_SASL_JAAS_CONFIG", "listener.name.controller.scram_sha_512.sasl.jaas.config"},
		{"KAFKA_A____B", "a-.b"},             // four underscores: "...." is "-" then "."
		{"KAFKA_A_____B", "a-_b"},            // five: "....." is "-" then ".." is "_"
		{"KAFKA_LOG_KAFKA_DIRS", "log.dirs"}, // Apache removes every KAFKA_, not only the prefix
		{"KAFKA_", ""},
		{"KAFKA_HEAP_OPTS", ""},
		{"KAFKA_OPTS", ""},
		{"KAFKA_JMX_OPTS", ""},
		{"KAFKA_JVM_PERFORMANCE_OPTS", ""},
		{"KAFKA_GC_LOG_OPTS", ""},
		{"KAFKA_LOG4J_OPTS", ""},
		{"KAFKA_LOG4J_ROOT_LOGLEVEL", ""},
		{"KAFKA_LOG4J_LOGGERS", ""},
		{"KAFKA_TOOLS_LOG4J_LOGLEVEL", ""},
		{"KAFKA_JMX_HOSTNAME", ""},
		{"KAFKA_VERSION", ""},
		{"CLUSTER_ID", ""},
		{"kafka_node_id", ""},
		{"MY_KAFKA_NODE_ID", ""},
	} {
		got, ok := Key(tc.env)
		if !ok {
			got = ""
		}
		if got != tc.want {
			t.Errorf("Key(%q) = %q, want %q", tc.env, got, tc.want)
		}
		rule, ok := apacheRule(tc.env)
		if !ok {
			rule = ""
		}
		if got != rule {
			t.Errorf("Key(%q) = %q, Apache's rule gives %q", tc.env, got, rule)
		}
	}
}

func TestMergeEnvironmentOverridesMountedFile(t *testing.T) {
	mounted := []byte("node.id=1\nprocess.roles=controller\n# a comment\n")
	env := []string{"KAFKA_NODE_ID=3", "KAFKA_HEAP_OPTS=-Xmx1G", "PATH=/bin", "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER", "BAD"}
	props := storage.ParseJavaProperties(string(Merge(mounted, env, []byte("fallback=1"))))
	want := map[string]string{"node.id": "3", "process.roles": "controller", "controller.listener.names": "CONTROLLER"}
	if len(props) != len(want) {
		t.Fatalf("merged %v, want %v", props, want)
	}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
	if got := string(Merge(nil, []string{"PATH=/bin"}, []byte("fallback=1"))); got != "fallback=1" {
		t.Errorf("nothing given: %q, want the fallback", got)
	}
	if got := string(Merge([]byte(" \n"), nil, []byte("fallback=1"))); got != "fallback=1" {
		t.Errorf("a blank mounted file: %q, want the fallback", got)
	}
}

// FuzzLines checks that any environment maps without a panic to lines that
// are each one property whose key has no upper case and no underscore run
// left from the variable's name.
func FuzzLines(f *testing.F) {
	for _, s := range []string{"KAFKA_NODE_ID=1", "KAFKA_A___B=x", "KAFKA_=", "KAFKA_X=a\nb", "CLUSTER_ID=abc", "KAFKA_KAFKA_KAFKA_=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, kv string) {
		for _, line := range Lines([]string{kv}) {
			key, _, ok := strings.Cut(line, "=")
			if !ok || key == "" || strings.Contains(key, "__") {
				t.Fatalf("%q made line %q", kv, line)
			}
		}
	})
}
