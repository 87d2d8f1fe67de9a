package controller

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// UpdateFeatures hands a kraft.version upgrade to the quorum (validate-only
// too), answers with the quorum's refusal as it gives it, never lowers
// kraft.version.
func TestUpdateFeaturesKRaftVersion(t *testing.T) {
	ctx := context.Background()
	c := New(1, nil)
	q := newFakeQuorum(t, c)
	clk := &clock{now: time.Unix(1000, 0)}
	q.activate(clk, Settings{NodeID: 1, ClusterID: testCluster, SessionTimeout: 9 * time.Second, Rand: rand.New(rand.NewPCG(1, 2)), TopicIDs: rand.NewChaCha8([32]byte{1})})
	q.write([]metadata.Record{&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 21}})
	update := func(level int16, typ int8, validate bool) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(1)
		req.ValidateOnly = validate
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: KRaftVersionFeature, MaxVersionLevel: level, UpgradeType: typ}}
		resp, err := c.UpdateFeatures(ctx, req)
		if err != nil {
			code, msg := ErrorCode(err)
			resp = req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
			resp.ErrorCode, resp.ErrorMessage = code, msg
		}
		return resp
	}
	message := func(r *kmsg.UpdateFeaturesResponse) string {
		if r.ErrorMessage == nil {
			return ""
		}
		return *r.ErrorMessage
	}

	q.refusal = &Error{Code: kerr.InvalidUpdateVersion.Code, Message: "not all of the voters support it"}
	if r := update(1, upgradeUpgrade, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code ||
		message(r) != "The update failed for all features since the following feature had an error: "+q.refusal.Message {
		t.Errorf("refused upgrade answered %d %q", r.ErrorCode, message(r))
	}
	q.refusal = nil
	if r := update(1, upgradeUpgrade, true); r.ErrorCode != 0 || q.kraftVersion() != 0 {
		t.Errorf("validate-only upgrade answered %d, kraft.version %d", r.ErrorCode, q.kraftVersion())
	}
	if r := update(1, upgradeUpgrade, false); r.ErrorCode != 0 || q.kraftVersion() != 1 {
		t.Errorf("upgrade answered %d %q, kraft.version %d", r.ErrorCode, message(r), q.kraftVersion())
	}
	if want := []bool{false, true, false}; !slices.Equal(q.validate, want) {
		t.Errorf("upgrades asked with validateOnly %v, want %v", q.validate, want)
	}
	if r := update(0, upgradeSafeDowngrade, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code || q.kraftVersion() != 1 {
		t.Errorf("downgrade answered %d %q, kraft.version %d", r.ErrorCode, message(r), q.kraftVersion())
	}
	if r := update(1, upgradeUpgrade, false); r.ErrorCode != 0 || len(q.validate) != 3 {
		t.Errorf("repeated upgrade answered %d, asked the quorum %d times", r.ErrorCode, len(q.validate))
	}

}
