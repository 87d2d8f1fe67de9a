package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/internal/supervisor"
)

// TestAnotherClusterAnswers runs one real kraftd quorum (node 1 alone,
// cluster A) and points other nodes at it. format refuses to bootstrap a
// second quorum where it answers, or to format a node of another cluster
// id to join it, unless told --ignore-existing-cluster (Apache 4.4.0's
// format asks no one and formats). A node of cluster B started as an
// observer of it then logs an error, as node 1 does on its side (an
// Apache 4.4.0 node so asked logs nothing, and the asking one an ERROR at
// every answer, about 20 a second), is not
// ready and says why, and both count the peer in
// kraftd_quorum_peer_cluster_id_mismatch; node 1 stays ready.
func TestAnotherClusterAnswers(t *testing.T) {
	t.Parallel()
	bin := kraftdBinary(t)
	clusterA := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	clusterB := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	dirID := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	root := t.TempDir()
	type node struct {
		id             int
		port, metrics  int
		conf, log, url string
	}
	// extra holds more lines; {port} stands for the node's own port.
	newNode := func(id int, extra string) node {
		n := node{id: id, port: freePort(t), metrics: freePort(t)}
		n.conf = filepath.Join(root, fmt.Sprintf("n%d.properties", id))
		n.log = filepath.Join(root, fmt.Sprintf("n%d.log", id))
		n.url = fmt.Sprintf("http://127.0.0.1:%d", n.metrics)
		body := fmt.Sprintf("process.roles=controller\nnode.id=%d\ncontroller.listener.names=CONTROLLER\nlisteners=CONTROLLER://127.0.0.1:%d\n"+
			"metadata.log.dir=%s\nkraftd.metrics.listener=http://127.0.0.1:%d\n%s", id, n.port, filepath.Join(root, fmt.Sprintf("n%d", id)), n.metrics,
			strings.ReplaceAll(extra, "{port}", fmt.Sprint(n.port)))
		if err := os.WriteFile(n.conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := func(n node) {
		p := &supervisor.Process{Name: fmt.Sprintf("kraftd-%d", n.id), Argv: []string{bin, "--log-format", "json", "start", "--config", n.conf}, Log: n.log}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
	}
	one := newNode(1, "")
	mustRun(t, bin, "format", "--config", one.conf, "--cluster-id", clusterA, "--standalone")
	start(one)
	waitFor(t, "node 1 ready", func() error { return expectReady(one.url, true, "") })
	addr1 := fmt.Sprintf("127.0.0.1:%d", one.port)

	boot := "controller.quorum.bootstrap.servers=" + addr1 + "\n"
	two := newNode(2, boot)
	static := newNode(3, fmt.Sprintf("controller.quorum.voters=1@%s,3@127.0.0.1:{port}\n", addr1))
	initial := newNode(4, "")
	for _, tc := range []struct {
		name string
		args []string
		says []string
	}{
		{"--standalone beside it", []string{"--config", two.conf, "--cluster-id", clusterB, "--standalone"},
			[]string{"controller.quorum.bootstrap.servers", addr1, "already serves cluster " + clusterA, "beside it", "--ignore-existing-cluster"}},
		{"--standalone of its own cluster", []string{"--config", two.conf, "--cluster-id", clusterA, "--standalone"},
			[]string{"second quorum of the same cluster", "--no-initial-controllers --cluster-id " + clusterA}},
		{"--initial-controllers naming it", []string{"--config", initial.conf, "--cluster-id", clusterA,
			"--initial-controllers", fmt.Sprintf("1@%s:%s,4@127.0.0.1:%d:%s", addr1, dirID, initial.port, clusterB)},
			[]string{"--initial-controllers", addr1, "already serves cluster " + clusterA}},
		{"--no-initial-controllers of another cluster", []string{"--config", two.conf, "--cluster-id", clusterB, "--no-initial-controllers"},
			[]string{"serves cluster " + clusterA + ", not --cluster-id " + clusterB, "could never join"}},
		{"a static voter of another cluster", []string{"--config", static.conf, "--cluster-id", clusterB},
			[]string{"controller.quorum.voters", "could never join"}},
	} {
		out, code := run(t, bin, append([]string{"format"}, tc.args...)...)
		if code != 2 || !containsAll(out, tc.says) {
			t.Errorf("format %s: exit %d (want 2, saying %q):\n%s", tc.name, code, tc.says, out)
		}
	}

	// Told to, format goes ahead; node 2 of cluster B then asks node 1.
	mustRun(t, bin, "format", "--config", two.conf, "--cluster-id", clusterB, "--no-initial-controllers", "--ignore-existing-cluster")
	start(two)
	waitFor(t, "both sides to log the other cluster", func() error {
		for _, c := range []struct{ log, says string }{{two.log, "a peer answers INCONSISTENT_CLUSTER_ID"}, {one.log, "a peer of another cluster asks"}} {
			if n := countErrorLines(t, c.log, c.says); n == 0 {
				return fmt.Errorf("%s has no error line %q", c.log, c.says)
			}
		}
		return nil
	})
	waitFor(t, "node 2 to say why it is not ready", func() error {
		return expectReady(two.url, false, "the controller at "+addr1+" answers INCONSISTENT_CLUSTER_ID")
	})
	for _, n := range []node{one, two} {
		waitFor(t, fmt.Sprintf("node %d's mismatch gauge", n.id), func() error { return expectMetric(n.url, "kraftd_quorum_peer_cluster_id_mismatch 1") })
	}
	if err := expectReady(one.url, true, ""); err != nil {
		t.Errorf("node 1 of the healthy quorum: %v", err)
	}
	// Rate-limited: node 2 asks many times a second, each side logs once a minute.
	if n := countErrorLines(t, one.log, "a peer of another cluster asks"); n > 3 {
		t.Errorf("node 1 logged the other cluster %d times", n)
	}
}

func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("waiting for %s: %v", what, err)
}

func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func expectReady(base string, ready bool, says string) error {
	code, body, err := httpGet(base + "/readyz")
	if err != nil {
		return err
	}
	if (code == http.StatusOK) != ready || !strings.Contains(body, says) {
		return fmt.Errorf("/readyz answered %d %s; want ready %v saying %q", code, body, ready, says)
	}
	return nil
}

func expectMetric(base, line string) error {
	_, body, err := httpGet(base + "/metrics")
	if err != nil {
		return err
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).MatchString(body) {
		return fmt.Errorf("/metrics has no line %q", line)
	}
	return nil
}

func countErrorLines(t *testing.T, path, says string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"level":"error"`) && strings.Contains(line, says) {
			n++
		}
	}
	return n
}
