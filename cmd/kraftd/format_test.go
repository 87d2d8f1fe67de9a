package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
)

// `kraftd format --add-scram` appends the credentials to
// bootstrap.checkpoint after the feature levels, and refuses a
// metadata.version older than 3.5-IV2 and a bad argument with exit 2.
func TestFormatAddScram(t *testing.T) {
	bin := kraftdBinary(t)
	conf := writeConfig(t, "controller.quorum.voters=1@127.0.0.1:9093\n")
	id := "q1Sh-9_ISia_zwGINzRvyQ"
	out, code := run(t, bin, "format", "--config", conf, "--cluster-id", id,
		"--add-scram", "SCRAM-SHA-512=[name=admin,password=secret]",
		"--add-scram", `SCRAM-SHA-256=[name=alice,iterations=8192,salt="N3E=",password=alice-secret]`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(conf), "meta", "bootstrap.checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := metadata.DecodeSnapshotFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	var scramRecs []*metadata.UserScramCredentialRecord
	for i, r := range f.Records {
		if s, ok := r.(*metadata.UserScramCredentialRecord); ok {
			scramRecs = append(scramRecs, s)
		} else if len(scramRecs) > 0 {
			t.Errorf("record %d (%T) follows a SCRAM credential", i, r)
		}
	}
	if len(scramRecs) != 2 || scramRecs[0].Name != "admin" || scramRecs[0].Mechanism != 2 ||
		scramRecs[1].Name != "alice" || scramRecs[1].Mechanism != 1 || scramRecs[1].Iterations != 8192 || string(scramRecs[1].Salt) != "7q" {
		t.Errorf("bootstrap SCRAM records %+v", scramRecs)
	}
	ctl := controller.New(1, f.Records)
	if _, ok := ctl.ScramCredential("admin", 2); !ok {
		t.Error("a controller with these bootstrap records does not serve admin before the log holds them")
	}

	refused := map[string][]string{
		"SCRAM is only supported in metadata.version 3.5-IV2": {"--release-version", "3.5-IV1", "--add-scram", "SCRAM-SHA-512=[name=a,password=b]"},
		"'name' is required": {"--add-scram", "SCRAM-SHA-512=[password=b]"},
	}
	for want, args := range refused {
		conf := writeConfig(t, "controller.quorum.voters=1@127.0.0.1:9093\n")
		out, code := run(t, bin, append([]string{"format", "--config", conf, "--cluster-id", id}, args...)...)
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("%v: exit %d: %s", args, code, out)
		}
	}
}
