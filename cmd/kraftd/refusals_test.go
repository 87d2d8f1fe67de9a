package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusedMistakes runs the real binary on each operator mistake of
// issue 32's class (a node that is not what its quorum or its directories
// say it is): each must exit 2 and name the key and the fix. Apache 4.4.0's
// own behaviour for each is noted beside it (docs/operations.md, "Refused
// mistakes").
func TestRefusedMistakes(t *testing.T) {
	t.Parallel()
	bin := kraftdBinary(t)
	const own = "listeners=CONTROLLER://127.0.0.1:19093\n"
	cluster := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	dirID := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	for _, tc := range []struct {
		name  string
		extra string   // lines over writeConfig's
		args  []string // after --config FILE --cluster-id ID for format
		says  []string
	}{
		// Apache refuses it at format and start (KafkaConfig).
		{"node.id not among the static voters", "controller.quorum.voters=2@127.0.0.1:9093,3@127.0.0.1:9094\n", nil,
			[]string{"controller.quorum.voters", "does not list node.id 1", "--no-initial-controllers"}},
		// Apache starts, and dials itself at the wrong port.
		{"own voter entry at another port", own + "controller.quorum.voters=1@127.0.0.1:19999\n", nil,
			[]string{"controller.quorum.voters", "127.0.0.1:19999", "port 19093", "advertised.listeners=CONTROLLER://127.0.0.1:19999"}},
		// Apache keeps the last entry of an id.
		{"a voter listed twice", "controller.quorum.voters=1@127.0.0.1:9093,1@127.0.0.1:9094\n", nil,
			[]string{"controller.quorum.voters", "listed twice"}},
		// Apache refuses it.
		{"--standalone over static voters", "controller.quorum.voters=1@127.0.0.1:9093\n", []string{"--standalone"},
			[]string{"controller.quorum.voters is set"}},
		// Apache formats an observer that knows the initial voters.
		{"--initial-controllers without this node", "", []string{"--initial-controllers", "2@127.0.0.1:9094:" + dirID},
			[]string{"--initial-controllers", "does not list node.id 1", "--no-initial-controllers"}},
		// Apache formats it.
		{"--initial-controllers with this node at another port", own, []string{"--initial-controllers", "1@127.0.0.1:19999:" + dirID},
			[]string{"--initial-controllers", "127.0.0.1:19999", "port 19093"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := writeConfig(t, tc.extra)
			cmds := [][]string{append([]string{"format", "--config", conf, "--cluster-id", cluster}, tc.args...)}
			if tc.args == nil {
				cmds = append(cmds, []string{"start", "--config", conf})
			}
			for _, args := range cmds {
				out, code := run(t, bin, args...)
				if code != 2 || !containsAll(out, tc.says) {
					t.Errorf("kraftd %s: exit %d (want 2, saying %q):\n%s", args[0], code, tc.says, out)
				}
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(conf), "meta")); err == nil {
				t.Errorf("a refused format wrote %s", filepath.Join(filepath.Dir(conf), "meta"))
			}
		})
	}

	// The NAT case the refusal points to is accepted.
	nat := writeConfig(t, own+"advertised.listeners=CONTROLLER://127.0.0.1:19999\ncontroller.quorum.voters=1@127.0.0.1:19999\n")
	mustRun(t, bin, "format", "--config", nat, "--cluster-id", cluster)
}

// TestRefusedMixedDirectories formats directories of two clusters and two
// nodes and points one node's metadata.log.dir and log.dirs at them. Apache
// 4.4.0 refuses each at start ("Invalid cluster.id in ...", "Stored node id
// ... doesn't match", "Duplicate directory ID") and a format that would add
// a directory of another cluster; kraftd too, with exit 2 and the fix.
func TestRefusedMixedDirectories(t *testing.T) {
	t.Parallel()
	bin := kraftdBinary(t)
	root := t.TempDir()
	dir := func(name string) string { return filepath.Join(root, name) }
	conf := func(name, nodeID, meta string, logDirs ...string) string {
		path := filepath.Join(root, name+".properties")
		body := "process.roles=controller\nnode.id=" + nodeID + "\ncontroller.listener.names=CONTROLLER\n" +
			"listeners=CONTROLLER://127.0.0.1:0\ncontroller.quorum.bootstrap.servers=127.0.0.1:9\nmetadata.log.dir=" + meta + "\n"
		if len(logDirs) > 0 {
			body += "log.dirs=" + strings.Join(logDirs, ",") + "\n"
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	clusterA := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	clusterB := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	mustRun(t, bin, "format", "--config", conf("a", "1", dir("a")), "--cluster-id", clusterA, "--standalone")
	mustRun(t, bin, "format", "--config", conf("b", "1", dir("b")), "--cluster-id", clusterB, "--no-initial-controllers")
	mustRun(t, bin, "format", "--config", conf("n2", "2", dir("n2")), "--cluster-id", clusterA, "--no-initial-controllers")
	if err := os.CopyFS(dir("copy"), os.DirFS(dir("a"))); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		says []string
	}{
		{"start: log.dirs of another cluster", []string{"start", "--config", conf("ab", "1", dir("a"), dir("b"))},
			[]string{"config log.dirs", dir("b"), clusterB, clusterA, "--ignore-formatted --cluster-id " + clusterA}},
		{"start: metadata.log.dir of another cluster", []string{"start", "--config", conf("ba", "1", dir("b"), dir("a"))},
			[]string{"config log.dirs", dir("a"), clusterB, clusterA}},
		{"start: log.dirs of another node", []string{"start", "--config", conf("an2", "1", dir("a"), dir("n2"))},
			[]string{"config node.id", dir("n2"), "node.id 2, not 1"}},
		{"start: a copied directory", []string{"start", "--config", conf("acopy", "1", dir("a"), dir("copy"))},
			[]string{"config log.dirs", "same directory.id", "copied"}},
		{"format: --ignore-formatted beside another cluster's directory",
			[]string{"format", "--config", conf("cb", "1", dir("c"), dir("b")), "--cluster-id", clusterA, "--no-initial-controllers", "--ignore-formatted"},
			[]string{"config log.dirs", dir("b"), clusterB, clusterA}},
		{"format: beside another node's directory",
			[]string{"format", "--config", conf("cn2", "1", dir("c"), dir("n2")), "--cluster-id", clusterA, "--no-initial-controllers", "--ignore-formatted"},
			[]string{"config node.id", dir("n2")}},
	} {
		out, code := run(t, bin, tc.args...)
		if code != 2 || !containsAll(out, tc.says) {
			t.Errorf("%s: exit %d (want 2, saying %q):\n%s", tc.name, code, tc.says, out)
		}
	}
	if _, err := os.Stat(dir("c")); err == nil {
		t.Errorf("a refused format wrote %s", dir("c"))
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
