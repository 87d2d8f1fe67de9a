package compat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestImageQuorumWithApacheBroker builds kraftd's OCI image (make image's
// path), runs three containers of it with podman as a static quorum
// configured only the apache/kafka image's way (KAFKA_* variables,
// CLUSTER_ID, one node's server.properties mounted in /mnt/shared/config),
// and a stock Apache broker (a host JVM) registers, produces and consumes
// through them. Then SIGTERM (podman stop) must resign and exit 0, and the
// restarted container must not format its data directory again.
func TestImageQuorumWithApacheBroker(t *testing.T) {
	p := newPodman(t)
	began := time.Now()
	summary := func(format string, args ...any) {
		t.Logf("image test: %6.1fs  %s", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	image := buildImage(t, p)
	summary("image built from the repository and loaded into podman as %s", image)

	ports := FreePorts(t, 6)
	clusterID := NewUUID()
	var voters []string
	for i := range 3 {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[i]))
	}
	names := make([]string, 3)
	for i := range names {
		names[i] = fmt.Sprintf("kraftd-imagetest-%d-%d", os.Getpid(), i+1)
	}
	// Stopped by name even when the test fails; their logs first.
	t.Cleanup(func() {
		for _, name := range names {
			if t.Failed() {
				logs, _ := p.logs(name)
				t.Logf("podman logs %s:\n%s", name, tail(logs, 40))
			}
			if _, err := p.run(2*time.Minute, "rm", "-f", "-t", "10", name); err != nil {
				t.Logf("removing %s: %v", name, err)
			}
		}
		p.run(time.Minute, "rmi", image) // another run may still use it
	})
	// Node 1 takes part of its configuration from a mounted file, which
	// its KAFKA_NODE_ID overrides.
	mounted := t.TempDir()
	os.Chmod(mounted, 0o755)
	writeFile(t, filepath.Join(mounted, "server.properties"),
		[]byte("process.roles=controller\nnode.id=99\ncontroller.listener.names=CONTROLLER\n"))
	for i, name := range names {
		args := []string{"run", "-d", "--name", name, "--network", "host",
			"--ulimit", "nofile=16384:16384", "--ulimit", "nproc=8192:8192",
			"-e", "CLUSTER_ID=" + clusterID,
			"-e", fmt.Sprintf("KAFKA_NODE_ID=%d", i+1),
			"-e", fmt.Sprintf("KAFKA_LISTENERS=CONTROLLER://127.0.0.1:%d", ports[i]),
			"-e", "KAFKA_CONTROLLER_QUORUM_VOTERS=" + strings.Join(voters, ","),
			"-e", fmt.Sprintf("KAFKA_KRAFTD_METRICS_LISTENER=http://127.0.0.1:%d", ports[3+i]),
			"-e", "KAFKA_HEAP_OPTS=-Xmx1G", // Apache's JVM option: ignored, not a property
		}
		if i == 0 {
			args = append(args, "-v", mounted+":/mnt/shared/config:ro")
		} else {
			args = append(args, "-e", "KAFKA_PROCESS_ROLES=controller", "-e", "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER")
		}
		p.must(2*time.Minute, append(args, image)...)
	}
	if user := p.must(time.Minute, "inspect", "-f", "{{.Config.User}}", names[0]); user != "1000:1000" {
		t.Fatalf("the container runs as %q, want the non-root 1000:1000", user)
	}
	summary("three kraftd containers started (host network, user 1000:1000)")
	for _, name := range names {
		pollLogs(t, p, name, `"message":"kraftd started"`)
		if got := p.must(time.Minute, "exec", name, "/usr/local/bin/kraftd", "--help"); !strings.Contains(got, "kraftd") {
			t.Fatalf("%s: kraftd --help in the container said %q", name, got)
		}
	}
	summary("each container formatted /var/lib/kafka/data with CLUSTER_ID and started")

	ReserveJVMs(t, 1)
	version := Versions[len(Versions)-1]
	broker := NewApacheBroker(t, version, 100, strings.Join(voters, ","), nil)
	broker.Format(t, clusterID)
	broker.Start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce(t, cl, "image-test", "first")
	summary("Apache %s broker registered with the containers' quorum and took a record", version)

	// SIGTERM: podman stop sends it and waits; kraftd resigns and exits 0.
	p.must(3*time.Minute, "stop", "-t", "60", names[0])
	if code := p.must(time.Minute, "inspect", "-f", "{{.State.ExitCode}}", names[0]); code != "0" {
		t.Fatalf("%s exited %s after SIGTERM, want 0", names[0], code)
	}
	logs, _ := p.logs(names[0])
	if !strings.Contains(logs, "resigning leadership") || !strings.Contains(logs, `"message":"stopped"`) {
		t.Fatalf("%s after SIGTERM did not log a resignation and a stop:\n%s", names[0], tail(logs, 20))
	}
	summary("podman stop (SIGTERM): %s resigned and exited 0", names[0])
	p.must(2*time.Minute, "start", names[0])
	pollLogs(t, p, names[0], "is formatted; not formatting it again")
	if n := strings.Count(ignoreErr(p.logs(names[0])), "Formatting metadata directory"); n != 1 {
		t.Fatalf("%s formatted %d times, want once", names[0], n)
	}
	produce(t, cl, "image-test", "second")
	got := consume(t, broker.Addr(), "image-test", 2)
	summary("restarted %s kept its data (not formatted again); consumed %v through the broker", names[0], got)
}

// produce writes one record, retrying for up to three minutes while the
// broker registers and the topic is created.
func produce(t *testing.T, cl *kgo.Client, topic, value string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("produce %q: still %v after three minutes", value, err)
		}
		time.Sleep(time.Second)
	}
}

// consume reads n records of topic from the start, within three minutes.
func consume(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v of %d records in three minutes", got, n)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// pollLogs waits up to three minutes for want in a container's logs.
func pollLogs(t *testing.T, p *podman, name, want string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		logs, err := p.logs(name)
		if err == nil && strings.Contains(logs, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q in its logs after three minutes (%v):\n%s", name, want, err, tail(logs, 30))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ignoreErr drops an error whose absence the caller checks otherwise.
func ignoreErr(s string, _ error) string { return s }
