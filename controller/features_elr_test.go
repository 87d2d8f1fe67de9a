package controller

import (
	"context"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// An UpdateFeatures that sets eligible.leader.replicas.version above 0
// writes the cluster-wide min.insync.replicas when there is none (the
// node's static value, else 1) and removes every broker's own, as Apache
// 4.4 does, even when ELR was on already; validate-only, or without ELR,
// it writes no config.
func TestUpdateFeaturesELRSafetyRecords(t *testing.T) {
	ctx := context.Background()
	str := func(s string) *string { return &s }
	cluster := metadata.ConfigResource{ResourceType: resourceTypeBroker}
	broker := func(id string) metadata.ConfigResource {
		return metadata.ConfigResource{ResourceType: resourceTypeBroker, Name: id}
	}
	for _, tc := range []struct {
		name         string
		static       map[string]string
		existing     []metadata.Record
		elrOn        bool // ELR on before the request
		feature      string
		validateOnly bool
		want         map[metadata.ConfigResource]string // min.insync.replicas after; absent = none
	}{
		{name: "default", feature: ELRFeature, want: map[metadata.ConfigResource]string{cluster: "1"}},
		{name: "static value", static: map[string]string{"min.insync.replicas": "2"}, feature: ELRFeature,
			want: map[metadata.ConfigResource]string{cluster: "2"}},
		{name: "cluster value kept, brokers' removed", feature: ELRFeature,
			existing: []metadata.Record{
				&metadata.ConfigRecord{ResourceType: resourceTypeBroker, Name: "min.insync.replicas", Value: str("3")},
				&metadata.ConfigRecord{ResourceType: resourceTypeBroker, ResourceName: "2", Name: "min.insync.replicas", Value: str("2")},
				&metadata.ConfigRecord{ResourceType: resourceTypeBroker, ResourceName: "10", Name: "min.insync.replicas", Value: str("1")},
			},
			want: map[metadata.ConfigResource]string{cluster: "3"}},
		{name: "ELR on already", elrOn: true, feature: ELRFeature,
			existing: []metadata.Record{
				&metadata.ConfigRecord{ResourceType: resourceTypeBroker, ResourceName: "1", Name: "min.insync.replicas", Value: str("2")},
			},
			want: map[metadata.ConfigResource]string{cluster: "1"}},
		{name: "validate-only", feature: ELRFeature, validateOnly: true,
			existing: []metadata.Record{
				&metadata.ConfigRecord{ResourceType: resourceTypeBroker, ResourceName: "1", Name: "min.insync.replicas", Value: str("2")},
			},
			want: map[metadata.ConfigResource]string{broker("1"): "2"}},
		{name: "another feature", feature: "group.version", want: map[metadata.ConfigResource]string{}},
	} {
		c, q, _ := newTestController(t, 27)
		c.UseStaticConfig(tc.static)
		if tc.elrOn {
			q.write([]metadata.Record{&metadata.FeatureLevelRecord{Name: ELRFeature, FeatureLevel: 1}})
		}
		q.write(tc.existing)
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(1)
		req.ValidateOnly = tc.validateOnly
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: tc.feature, MaxVersionLevel: 1, UpgradeType: upgradeUpgrade}}
		resp, err := c.UpdateFeatures(ctx, req)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("%s: %v %+v", tc.name, err, resp)
		}
		got := map[metadata.ConfigResource]string{}
		for r, configs := range c.image.Configs {
			if v, ok := configs["min.insync.replicas"]; ok {
				got[r] = v
			}
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: min.insync.replicas %v, want %v", tc.name, got, tc.want)
		}
	}
}
