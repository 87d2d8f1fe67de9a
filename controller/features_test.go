package controller

import (
	"context"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// Every level Apache 4.4 ships as production is known by its name, and a
// bare release names its newest level.
func TestParseReleaseVersionEveryLevel(t *testing.T) {
	for level := MinMetadataVersion; level <= LatestMetadataVersion; level++ {
		name := MetadataVersionName(level)
		got, err := ParseReleaseVersion(name)
		if err != nil || got != level {
			t.Errorf("%s: level %d, %v; want %d", name, got, err, level)
		}
	}
	for release, want := range map[string]int16{"3.3": 7, "3.9": 21, "4.0": 25, "4.1": 27, "4.2": 29, "4.3": 30, "4.4": 33} {
		if got, err := ParseReleaseVersion(release); err != nil || got != want {
			t.Errorf("%s: level %d, %v; want %d", release, got, err, want)
		}
	}
	for _, bad := range []string{"4.5", "4.5-IV0", "3.3-IV2", "4.4-IV3", ""} {
		if _, err := ParseReleaseVersion(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Formatting at a level writes the feature levels Apache 4.4's storage tool
// writes at it (Feature.defaultLevel).
func TestDefaultFeatureLevelsByRelease(t *testing.T) {
	for _, tc := range []struct {
		mv   int16
		want map[string]int16
	}{
		{21, map[string]int16{}},
		{27, map[string]int16{"transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 1}},
		{28, map[string]int16{"transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 1, "share.version": 1}},
		{29, map[string]int16{"transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 1, "share.version": 1, "streams.version": 1}},
		{33, map[string]int16{"transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 1, "share.version": 2, "streams.version": 1}},
	} {
		if got := DefaultFeatureLevels(tc.mv); !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", MetadataVersionName(tc.mv), got, tc.want)
		}
	}
}

// A downgrade is safe when no level it crosses changed the records
// (Apache's MetadataVersion.checkIfMetadataChanged).
func TestMetadataChangedBetween(t *testing.T) {
	for _, tc := range []struct {
		low, high int16
		changed   bool
	}{
		{25, 27, false}, // 4.1-IV1 to 4.0-IV3
		{22, 27, true},  // ... to 4.0-IV0 crosses 4.0-IV1 (ELR records)
		{29, 30, true},  // 4.3-IV0 to 4.2-IV1: cordoned log dirs
		{30, 31, false}, // 4.4-IV0 to 4.3-IV0
		{31, 33, true},
		{27, 29, false}, // 4.2-IV1 to 4.1-IV1
	} {
		if got := MetadataChangedBetween(tc.low, tc.high); got != tc.changed {
			t.Errorf("%s down to %s: changed=%v, want %v", MetadataVersionName(tc.high), MetadataVersionName(tc.low), got, tc.changed)
		}
	}
}

// With eligible.leader.replicas.version on in the bootstrap records, the
// first leader also writes a cluster-wide min.insync.replicas (Apache's
// ActivationRecordsGenerator, 4.0 and later), inside the bootstrap
// transaction; without ELR it does not.
func TestActivationRecordsWithELR(t *testing.T) {
	mvRec := func(level int16) *metadata.FeatureLevelRecord {
		return &metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: level}
	}
	withELR := New(1, []metadata.Record{mvRec(27), &metadata.FeatureLevelRecord{Name: ELRFeature, FeatureLevel: 1}}).ActivationRecords()
	if len(withELR) != 5 {
		t.Fatalf("with ELR: %d records %v", len(withELR), withELR)
	}
	cfg, ok := withELR[3].(*metadata.ConfigRecord)
	if !ok || cfg.ResourceType != 4 || cfg.ResourceName != "" || cfg.Name != "min.insync.replicas" || cfg.Value == nil || *cfg.Value != "1" {
		t.Fatalf("with ELR, record 3 is %#v", withELR[3])
	}
	if _, ok := withELR[4].(*metadata.EndTransactionRecord); !ok {
		t.Fatalf("with ELR, the transaction does not end last: %#v", withELR[4])
	}
	if without := New(1, []metadata.Record{mvRec(25)}).ActivationRecords(); len(without) != 3 {
		t.Fatalf("without ELR: %v", without)
	}
}

// UpdateFeatures refuses with Apache's words: the node that lacks the
// level is named, this controller first, then brokers, then controllers.
func TestUpdateFeaturesRefusalWords(t *testing.T) {
	c, q, _ := newTestController(t, 27)
	register(t, c, q, 1) // supports metadata.version 7-27 only
	for _, tc := range []struct {
		name  string
		level int16
		want  string
	}{
		{MetadataVersionFeature, 33, "The update failed for all features since the following feature had an error: Invalid update version 33 for feature metadata.version. Broker 1 only supports versions 7-27"},
		{MetadataVersionFeature, 34, "The update failed for all features since the following feature had an error: Invalid update version 34 for feature metadata.version. Local controller 1 only supports versions 7-33"},
		{"no.such.feature", 1, "The update failed for all features since the following feature had an error: Invalid update version 1 for feature no.such.feature. Local controller 1 does not support this feature."},
		{"group.version", -1, "The update failed for all features since the following feature had an error: Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
	} {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(1)
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: tc.name, MaxVersionLevel: tc.level, UpgradeType: upgradeUpgrade}}
		resp, err := c.UpdateFeatures(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.ErrorMessage; got == nil || *got != tc.want {
			t.Errorf("%s=%d: %v, want %q", tc.name, tc.level, got, tc.want)
		}
	}
}

// The features epoch (ApiVersions' FinalizedFeaturesEpoch) is the last
// offset of the replay round in which a feature level changed, or of the
// snapshot loaded, as Apache's FeaturesPublisher reports it: rounds of
// other records, however many, leave it where it is.
func TestFeaturesEpochMovesOnlyWithFeatures(t *testing.T) {
	c := New(1, nil)
	offset := int64(0)
	round := func(recs ...metadata.Record) {
		for _, r := range recs {
			if err := c.Replay(offset, r); err != nil {
				t.Fatal(err)
			}
			offset++
		}
		c.MarkApplied(offset - 1)
	}
	epoch := func() int64 { _, e := c.Features(); return e }
	round(&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 27}, &metadata.NoOpRecord{}, &metadata.NoOpRecord{})
	if e := epoch(); e != 2 {
		t.Fatalf("after the bootstrap round: epoch %d, want 2", e)
	}
	for i := range 20 {
		recs := make([]metadata.Record, 1+i%4)
		for j := range recs {
			recs[j] = &metadata.NoOpRecord{}
		}
		round(recs...)
		if e := epoch(); e != 2 {
			t.Fatalf("after %d rounds without a feature change (at offset %d): epoch %d, want 2", i+1, offset-1, e)
		}
	}
	round(&metadata.FeatureLevelRecord{Name: "group.version", FeatureLevel: 1}, &metadata.NoOpRecord{})
	if e := epoch(); e != offset-1 {
		t.Fatalf("after a feature change: epoch %d, want %d", e, offset-1)
	}
	im := metadata.NewImage()
	im.Features = map[string]int16{MetadataVersionFeature: 27}
	c.LoadSnapshot(500, im)
	if e := epoch(); e != 500 {
		t.Fatalf("after loading a snapshot at 500: epoch %d", e)
	}
}
