package compat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/storage/batch"
)

var captureFlag = flag.Bool("capture", false, "TestApacheGoldenCapture: also copy the captured files into testdata/apache-<version>/")

// GoldenClusterID is the cluster id of the committed golden captures
// ("kraftd-golden-01" as a Kafka Uuid).
const GoldenClusterID = "a3JhZnRkLWdvbGRlbi0wMQ"

// goldenFiles are the files copied from an Apache controller's metadata
// directory into testdata/apache-<version>/, keeping their relative paths.
// bootstrap.checkpoint is copied too where the version writes it.
var goldenFiles = []string{
	"meta.properties",
	"__cluster_metadata-0/00000000000000000000-0000000000.checkpoint",
	"__cluster_metadata-0/00000000000000000000.log",
	"__cluster_metadata-0/quorum-state",
	"__cluster_metadata-0/leader-epoch-checkpoint",
	"__cluster_metadata-0/partition.metadata",
}

// writesBootstrapCheckpoint says whether `kafka-storage format` of a version
// writes bootstrap.checkpoint. Found by running them: 4.1.2 writes it (and
// the bootstrap snapshot holds only the KRaft records); 4.4.0 does not, and
// its bootstrap snapshot 00000000000000000000-0000000000.checkpoint carries
// the feature-level records as well.
var writesBootstrapCheckpoint = map[string]bool{"4.1.2": true, "4.4.0": false}

// An Apache controller is formatted --standalone, leads, registers itself,
// and is stopped with SIGTERM; the files it left are checked and, with
// -capture, copied into testdata/ as golden inputs for other packages:
//
//	go test ./compat -run TestApacheGoldenCapture -capture
func TestApacheGoldenCapture(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 1)
		n := NewApacheController(t, ApacheOptions{Version: v, NodeID: 1})
		n.Format(t, GoldenClusterID, "--standalone")
		n.Start(t)
		WaitLeader(t, []string{n.Addr()}, nil)
		// DescribeCluster for controllers lists registered controllers, from
		// the committed RegisterControllerRecord: once node 1 is listed, the
		// log holds bootstrap records, leader change and registration.
		Eventually(t, ReadyTimeout, "controller 1 registered", n.Proc, func() error {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.SetVersion(1)
			req.EndpointType = 2
			r, err := Request(n.Addr(), req)
			if err != nil {
				return err
			}
			resp := r.(*kmsg.DescribeClusterResponse)
			if resp.ErrorCode != 0 {
				return fmt.Errorf("DescribeCluster: error code %d", resp.ErrorCode)
			}
			for _, b := range resp.Brokers {
				if b.NodeID == 1 {
					return nil
				}
			}
			return fmt.Errorf("DescribeCluster: controller 1 not registered yet (%d listed)", len(resp.Brokers))
		})
		n.Proc.Stop()
		// The JVM runs its shutdown hooks on SIGTERM, then exits with 143.
		if exited, err := n.Proc.Exited(); !exited || (err != nil && err.Error() != "exit status 143") {
			t.Errorf("SIGTERM: exited %v, err %v; want a clean exit", exited, err)
		}

		listing := listFiles(t, n.Dir)
		t.Logf("files left by Apache %s:\n%s", v, listing)
		checkGolden(t, n.Dir, v, GoldenClusterID)
		if *captureFlag {
			dst := filepath.Join("testdata", "apache-"+v)
			if err := os.RemoveAll(dst); err != nil {
				t.Fatal(err)
			}
			files := goldenFiles
			if writesBootstrapCheckpoint[v] {
				files = append(files, "bootstrap.checkpoint")
			}
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(n.Dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dst, f), b)
			}
			writeFile(t, filepath.Join(dst, "FILES.txt"), []byte(listing))
			t.Logf("captured into %s", dst)
		}
	})
}

// The committed captures are present and well formed. This needs no JVM.
func TestGoldenTestdata(t *testing.T) {
	t.Parallel()
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			dir := filepath.Join("testdata", "apache-"+v)
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("%v: run `go test ./compat -run TestApacheGoldenCapture -capture` and commit testdata/", err)
			}
			checkGolden(t, dir, v, GoldenClusterID)
		})
	}
}

// listFiles lists every file under dir with its size, one per line.
func listFiles(t testing.TB, dir string) string {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s %d\n", rel, info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkGolden checks the golden files of one metadata directory.
func checkGolden(t *testing.T, dir, version, clusterID string) {
	t.Helper()
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	meta := ParseProperties(read("meta.properties"))
	if meta["version"] != "1" || meta["cluster.id"] != clusterID || meta["node.id"] != "1" || len(meta["directory.id"]) != 22 {
		t.Errorf("meta.properties %v: want version 1, cluster.id %s, node.id 1, a directory.id", meta, clusterID)
	}
	batchFiles := []string{goldenFiles[1], goldenFiles[2]}
	_, err := os.Stat(filepath.Join(dir, "bootstrap.checkpoint"))
	if has := err == nil; has != writesBootstrapCheckpoint[version] {
		t.Errorf("bootstrap.checkpoint present: %v, want %v for Apache %s", has, writesBootstrapCheckpoint[version], version)
	} else if has {
		batchFiles = append(batchFiles, "bootstrap.checkpoint")
	}
	for _, f := range batchFiles {
		n, err := checkBatches(read(f))
		if err != nil || n == 0 {
			t.Errorf("%s: %d batches, %v", f, n, err)
		}
	}
	if got, want := string(read(goldenFiles[5])), "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"; strings.TrimSpace(got) != want {
		t.Errorf("partition.metadata %q, want %q", got, want)
	}
	var qs map[string]any
	if err := json.Unmarshal(read(goldenFiles[3]), &qs); err != nil || qs["data_version"] == nil {
		t.Errorf("quorum-state: %v, %v; want JSON with data_version", qs, err)
	}
	if err := checkEpochCheckpoint(read(goldenFiles[4])); err != nil {
		t.Errorf("leader-epoch-checkpoint: %v", err)
	}
}

// checkBatches walks a file of RecordBatch v2 (a log segment or snapshot):
// every batch has magic 2, a CRC-32C that matches, and the batches fill the
// file exactly. It returns how many there are.
func checkBatches(b []byte) (int, error) {
	r := batch.NewSliceReader(b, 0)
	for n := 0; ; n++ {
		_, raw, err := r.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("batch %d: %w", n, err)
		}
		if _, err := batch.Check(raw); err != nil {
			return n, fmt.Errorf("batch %d: %w", n, err)
		}
	}
}

// checkEpochCheckpoint checks the leader-epoch-checkpoint text format:
// version 0, an entry count, then that many "<epoch> <startOffset>" lines.
func checkEpochCheckpoint(b []byte) error {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 2 || lines[0] != "0" {
		return fmt.Errorf("%q: want version 0 and a count", b)
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count != len(lines)-2 || count < 1 {
		return fmt.Errorf("%q: count %q for %d entries", b, lines[1], len(lines)-2)
	}
	for _, l := range lines[2:] {
		if f := strings.Fields(l); len(f) != 2 {
			return fmt.Errorf("entry %q", l)
		}
	}
	return nil
}
