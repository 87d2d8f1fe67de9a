package format

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/uuid"
)

var formatTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func TestParseInitialControllers(t *testing.T) {
	dir := uuid.FromBits(1, 2)
	got, err := ParseInitialControllers("1@localhost:9093:"+dir.String()+", 2@[::1]:9094:"+dir.String(), "CONTROLLER")
	want := []Voter{{1, "localhost", 9093, dir, "CONTROLLER"}, {2, "::1", 9094, dir, "CONTROLLER"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v, %v", got, err)
	}
	for in, says := range map[string]string{
		"x@h:1:" + dir.String(): "is not id@host:port:directoryId",
		"1@h":                   "has no directory id",
		"1@h:1:nope":            "directory id",
		"1@h:" + dir.String():   "want host:port",
		"1@h:1:" + dir.String() + ",1@h:2:" + dir.String(): "listed twice",
	} {
		if _, err := ParseInitialControllers(in, "C"); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want %q", in, err, says)
		}
	}
}

func TestFeatureLevels(t *testing.T) {
	mv := controller.LatestMetadataVersion
	levels, err := FeatureLevels(mv, 1, []string{"group.version=0", "kraft.version=1"})
	if err != nil || levels["group.version"] != 0 {
		t.Fatalf("%v, %v", levels, err)
	}
	if recs := Records(mv, levels); recs[0].(*metadata.FeatureLevelRecord).Name != controller.MetadataVersionFeature {
		t.Fatalf("records %+v", recs)
	}
	for _, tc := range []struct {
		mv, kraft int16
		features  []string
		says      string
	}{
		{mv, 0, []string{"group.version"}, "want name=level"},
		{mv, 0, []string{"metadata.version=27"}, "--release-version"},
		{mv, 0, []string{"kraft.version=1"}, "contradicts the quorum flags"},
		{controller.MVKRaftVersion1 - 1, 1, nil, "kraft.version 1 needs metadata.version"},
	} {
		if _, err := FeatureLevels(tc.mv, tc.kraft, tc.features); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}

// Dir gives an initial voter's metadata directory its voter entry's
// directory.id, and writes the bootstrap metadata reads back.
func TestDir(t *testing.T) {
	fsys := storage.NewMemFS()
	dir := uuid.FromBits(3, 4)
	boot := metadata.Bootstrap{Records: Records(controller.LatestMetadataVersion, nil), KRaftVersion: 1,
		Voters: VotersRecord([]Voter{{ID: 1, Host: "h", Port: 1, DirectoryID: dir, Listener: "C"}})}
	if err := Dir(fsys, "/m", "q1Sh-9_ISia_zwGINzRvyQ", 1, boot, formatTime); err != nil {
		t.Fatal(err)
	}
	nd, err := storage.OpenNodeDir(fsys, "/m", storage.NodeDirConfig{NodeID: 1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	b := nd.Bootstrap
	got, err := metadata.DecodeBootstrap(b.CheckpointPath, b.Checkpoint, b.SnapshotPath, b.Snapshot)
	if err != nil || !reflect.DeepEqual(got, boot) || nd.Meta.DirectoryID != dir {
		t.Fatalf("%+v, %v, directory.id %s", got, err, nd.Meta.DirectoryID)
	}
}

func TestCheckAnswers(t *testing.T) {
	initial := []Voter{{ID: 2, Host: "b", Port: 2}}
	targets := Targets([]string{"a:1"}, initial, []string{"b:2", "c:3"})
	if want := []Target{{"a:1", "controller.quorum.bootstrap.servers"}, {"b:2", "--initial-controllers"}, {"c:3", "controller.quorum.voters"}}; !reflect.DeepEqual(targets, want) {
		t.Fatalf("targets %+v", targets)
	}
	const own = "q1Sh-9_ISia_zwGINzRvyQ"
	for _, tc := range []struct {
		answer    Answer
		bootstrap bool
		says      string // "" when format may go on
	}{
		{Answer{Addr: "b:2", ClusterID: own}, true, "--initial-controllers: the controller at b:2 already serves cluster " + own + ", so this would bootstrap a second quorum of the same cluster"},
		{Answer{Addr: "a:1", ClusterID: "other"}, true, "a second quorum beside it"},
		{Answer{Addr: "a:1", Err: errors.New("old")}, true, "does not say its cluster: old"},
		{Answer{Addr: "c:3", ClusterID: own}, false, ""},
		{Answer{Addr: "a:1", Err: errors.New("old")}, false, ""},
		{Answer{Addr: "c:3", ClusterID: "other"}, false, "controller.quorum.voters: the controller at c:3 serves cluster other, not --cluster-id " + own},
	} {
		err := CheckAnswers(own, targets, []Answer{tc.answer}, tc.bootstrap)
		if tc.says == "" && err != nil || tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%+v, bootstrap %v: %v, want %q", tc.answer, tc.bootstrap, err, tc.says)
		}
	}
}
