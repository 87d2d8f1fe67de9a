package compat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

// dumpLogClass is kafka-dump-log's main class, which moved from core to
// tools after 4.1.
func dumpLogClass(version string) string {
	if strings.HasPrefix(version, "4.1.") {
		return "kafka.tools.DumpLogSegments"
	}
	return "org.apache.kafka.tools.DumpLogSegments"
}

// TestKraftdStandaloneWithApacheTools formats and runs a standalone kraftd
// node, queries it with Apache's own tools, then reads the files it wrote
// with kafka-dump-log and (where the release ships it) the metadata shell.
func TestKraftdStandaloneWithApacheTools(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 1)
		port := FreePorts(t, 1)[0]
		dir := filepath.Join(t.TempDir(), "metadata")
		conf := WriteKraftdConfig(t, 1, Addr(port), dir, map[string]string{
			// Small, so that a snapshot is written within seconds.
			"metadata.log.max.record.bytes.between.snapshots": "400",
		})
		clusterID := NewUUID()
		// Formatted at the tools' own release line: an older tool can name
		// no newer level, and its metadata shell cannot load one.
		out, err := exec.Command(KraftdBinary(t), "format", "--config", conf, "--cluster-id", clusterID, "--standalone",
			"--release-version", ReleaseLine(v)).CombinedOutput()
		if err != nil {
			t.Fatalf("kraftd format: %v\n%s", err, out)
		}
		node := StartKraftd(t, "kraftd-standalone", "--log-format", "json", "start", "--config", conf)
		WaitLeader(t, []string{Addr(port)}, nil)

		// ApiVersions v0, v3 and v4 all list exactly the served ranges.
		var ranges []string
		for _, version := range []int16{0, 3, 4} {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(version)
			req.ClientSoftwareName, req.ClientSoftwareVersion = "kraftd-compat", "1"
			resp, err := Request(Addr(port), req)
			if err != nil {
				t.Fatalf("ApiVersions v%d: %v", version, err)
			}
			av := resp.(*kmsg.ApiVersionsResponse)
			var got []string
			for _, k := range av.ApiKeys {
				got = append(got, fmt.Sprintf("%d:%d-%d", k.ApiKey, k.MinVersion, k.MaxVersion))
			}
			if av.ErrorCode != 0 || len(got) == 0 {
				t.Fatalf("ApiVersions v%d: error %d, %d keys", version, av.ErrorCode, len(got))
			}
			if ranges != nil && strings.Join(got, " ") != strings.Join(ranges, " ") {
				t.Errorf("ApiVersions v%d lists %v, v0 listed %v", version, got, ranges)
			}
			ranges = got
		}

		status, err := MetadataQuorum(t, v, "--bootstrap-controller", Addr(port), "describe", "--status")
		if err != nil {
			t.Fatal(err)
		}
		s := statusLines(status)
		endpoint := fmt.Sprintf(`"endpoints": ["CONTROLLER://127.0.0.1:%d"]`, port)
		if s["ClusterId"] != clusterID || s["LeaderId"] != "1" || !strings.Contains(s["CurrentVoters"], endpoint) {
			t.Errorf("describe --status:\n%s", status)
		}
		replication, err := MetadataQuorum(t, v, "--bootstrap-controller", Addr(port), "describe", "--replication")
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^1\s+\S+\s+\d+\s+0\s+.*Leader\s*$`).MatchString(replication) {
			t.Errorf("describe --replication has no leader row for node 1:\n%s", replication)
		}
		features, err := Features(t, v, "--bootstrap-controller", Addr(port), "describe")
		if err != nil {
			t.Fatal(err)
		}
		// kraftd supports up to 4.4-IV2 (level 33), which a 4.1 tool cannot
		// name; the finalized level is the line's default.
		maxName := "4.4-IV2"
		if !strings.HasPrefix(v, "4.4.") {
			maxName = "UNKNOWN 33"
		}
		finalized := controller.MetadataVersionName(defaultLevels[v])
		if !regexp.MustCompile(`Feature: metadata.version\s+SupportedMinVersion: 3.3-IV3\s+SupportedMaxVersion: ` + maxName + `\s+FinalizedVersionLevel: ` + finalized).MatchString(features) {
			t.Errorf("kafka-features describe:\n%s", features)
		}
		checkMetadataVersionDowngrades(t, v, Addr(port))

		partition := filepath.Join(dir, "__cluster_metadata-0")
		var snapshot string
		Eventually(t, ReadyTimeout, "a snapshot written by kraftd", node, func() error {
			files, _ := filepath.Glob(filepath.Join(partition, "*.checkpoint"))
			for _, f := range files {
				if !strings.HasSuffix(f, "00000000000000000000-0000000000.checkpoint") {
					snapshot = f
					return nil
				}
			}
			return fmt.Errorf("none yet among %v", files)
		})
		node.Stop()

		segments, _ := filepath.Glob(filepath.Join(partition, "*.log"))
		for _, file := range append(segments, snapshot) {
			apache, stderr, err := RunTool(t, v, dumpLogClass(v), "--cluster-metadata-decoder", "--files", file)
			if err != nil || strings.Contains(apache+stderr, "Exception") {
				t.Fatalf("kafka-dump-log on %s: %v\n%s\n%s", file, err, apache, stderr)
			}
			ours, err := exec.Command(KraftdBinary(t), "dump-log", file).CombinedOutput()
			if err != nil {
				t.Fatalf("kraftd dump-log %s: %v\n%s", file, err, ours)
			}
			if a, o := strings.Count(apache, "| offset: "), strings.Count(string(ours), "| offset: "); a != o || a == 0 {
				t.Errorf("%s: kafka-dump-log printed %d records, kraftd dump-log %d\n%s\n%s", filepath.Base(file), a, o, apache, ours)
			}
			if strings.Contains(string(ours), "Undecodable") {
				t.Errorf("kraftd dump-log could not decode a record of %s:\n%s", file, ours)
			}
		}

		// The metadata shell ships as kafka-shell, which Maven Central serves
		// for 4.1.x but not for 4.4.0 here (docs/compatibility.md).
		if _, err := os.Stat(filepath.Join(KafkaCache(t, v), "libs")); err == nil && strings.HasPrefix(v, "4.1.") {
			out, stderr, err := RunTool(t, v, "org.apache.kafka.shell.MetadataShell", "--snapshot", snapshot, "cat", "/image/features/metadataVersion")
			if err != nil || !strings.Contains(out, "4.1-IV1") {
				t.Errorf("metadata shell on kraftd's snapshot %s: %v\n%s\n%s", snapshot, err, out, stderr)
			}
		} else {
			t.Logf("Apache %s ships no metadata shell here; kraftd's snapshot was read by kafka-dump-log only", v)
		}
	})
}

// checkMetadataVersionDowngrades runs kafka-features downgrade against a
// kraftd leader as Apache allows it: from 4.1-IV1 to 4.0-IV3 (no level in
// between changed the records: safe) and back up; from 4.4-IV2 to 4.4-IV0
// refused (4.4-IV1 and 4.4-IV2 changed them), with Apache 4.4's words.
func checkMetadataVersionDowngrades(t *testing.T, v, addr string) {
	t.Helper()
	if strings.HasPrefix(v, "4.4.") {
		out, err := Features(t, v, "--bootstrap-controller", addr, "downgrade", "--metadata", "4.4-IV0")
		if err == nil || !strings.Contains(out+err.Error(), "Unsupported metadata.version downgrade from 33 to 31. Refusing to perform the requested downgrade because it might delete metadata information.") {
			t.Errorf("downgrade to 4.4-IV0 from 4.4-IV2: %v\n%s", err, out)
		}
		return
	}
	out, err := Features(t, v, "--bootstrap-controller", addr, "downgrade", "--metadata", "4.0-IV3")
	if err != nil || !strings.Contains(out, "metadata.version was downgraded to 25.") {
		t.Errorf("downgrade to 4.0-IV3 from 4.1-IV1: %v\n%s", err, out)
	}
	out, err = Features(t, v, "--bootstrap-controller", addr, "upgrade", "--metadata", "4.1")
	if err != nil || !strings.Contains(out, "metadata.version was upgraded to 27.") {
		t.Errorf("upgrade back to 4.1-IV1: %v\n%s", err, out)
	}
}
