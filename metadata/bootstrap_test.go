package metadata

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/storage/uuid"
)

func TestBootstrapRoundTrip(t *testing.T) {
	voters := &VotersRecord{Voters: []VotersRecordVoter{{VoterId: 2, VoterDirectoryId: uuid.FromBits(7, 2),
		Endpoints: []VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: 9093}}}}}
	records := []Record{&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27}}
	for _, b := range []Bootstrap{{Records: records}, {Records: records, KRaftVersion: 1, Voters: voters}} {
		checkpoint, snapshot := EncodeBootstrap(b, 1700000000000)
		if (snapshot != nil) != (b.Voters != nil) {
			t.Fatalf("voters %v: snapshot of %d bytes", b.Voters, len(snapshot))
		}
		got, err := DecodeBootstrap("c", checkpoint, "s", snapshot)
		if err != nil || !reflect.DeepEqual(got, b) {
			t.Fatalf("decoded %+v, %v; want %+v", got, err, b)
		}
		if want := map[bool]uuid.UUID{false: uuid.Zero, true: uuid.FromBits(7, 2)}[b.Voters != nil]; b.DirectoryID(2) != want || b.DirectoryID(3) != uuid.Zero {
			t.Fatalf("directory ids %s, %s", b.DirectoryID(2), b.DirectoryID(3))
		}
	}
	// A damaged file is named by its path.
	checkpoint, snapshot := EncodeBootstrap(Bootstrap{Records: records, Voters: voters}, 0)
	for _, tc := range []struct {
		checkpoint, snapshot []byte
		path                 string
	}{{[]byte("garbage"), snapshot, "/d/bootstrap.checkpoint"}, {checkpoint, []byte("garbage"), "/d/snap"}} {
		_, err := DecodeBootstrap("/d/bootstrap.checkpoint", tc.checkpoint, "/d/snap", tc.snapshot)
		if err == nil || !strings.HasPrefix(err.Error(), tc.path+": ") {
			t.Errorf("damaged %s: %v", tc.path, err)
		}
	}
}

// Apache 4.4 writes no bootstrap.checkpoint: the records come from the
// bootstrap snapshot, with its voters.
func TestDecodeBootstrapApache44(t *testing.T) {
	path := "../compat/testdata/apache-4.4.0/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
	raw, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeBootstrap("bootstrap.checkpoint", nil, path, raw)
	if err != nil || len(b.Records) == 0 || b.KRaftVersion != 1 || b.Voters == nil {
		t.Fatalf("%+v, %v", b, err)
	}
	if fl, ok := b.Records[0].(*FeatureLevelRecord); !ok || fl.Name != "metadata.version" {
		t.Fatalf("first record %+v", b.Records[0])
	}
}
