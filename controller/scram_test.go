package controller

import (
	"testing"

	"github.com/kraftd/kraftd/metadata"
)

// Before the log holds a metadata.version, the bootstrap records'
// credentials are served (the last of duplicates wins); once it does, only
// the image's are, so a credential removed or never written is refused.
func TestScramCredentialFromBootstrapUntilBootstrapped(t *testing.T) {
	mv := &metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: LatestMetadataVersion}
	old := &metadata.UserScramCredentialRecord{Name: "admin", Mechanism: 2, Iterations: 4096}
	cur := &metadata.UserScramCredentialRecord{Name: "admin", Mechanism: 2, Iterations: 8192}
	c := New(1, []metadata.Record{mv, old, cur})
	if got, ok := c.ScramCredential("admin", 2); !ok || got.Iterations != 8192 {
		t.Errorf("before bootstrap: %+v %v, want the later bootstrap credential", got, ok)
	}
	if _, ok := c.ScramCredential("admin", 1); ok {
		t.Error("SCRAM-SHA-256 served for a SCRAM-SHA-512 credential")
	}
	if err := c.Replay(0, mv); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.ScramCredential("admin", 2); ok {
		t.Error("after the log holds metadata.version, a credential it does not hold is served")
	}
	if err := c.Replay(1, cur); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.ScramCredential("admin", 2); !ok || got.Iterations != 8192 {
		t.Errorf("from the image: %+v %v", got, ok)
	}
}
