package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// Upgrade types of UpdateFeatures v1+ (v0's AllowDowngrade means a safe
// downgrade).
const (
	upgradeUpgrade         int8 = 1
	upgradeSafeDowngrade   int8 = 2
	upgradeUnsafeDowngrade int8 = 3
)

// UpdateFeatures handles UpdateFeatures (Apache's
// FeatureControlManager.updateFeatures): every update must be valid, or
// none is applied and the first error answers for all. The new level must be
// inside kraftd's supported range and inside the range every registered
// broker and controller supports; a lower level needs a downgrade type;
// metadata.version goes down only across levels that changed no record
// (Apache's safe downgrade; it has no unsafe one).
// A request that sets eligible.leader.replicas.version above 0 also writes
// the cluster-wide min.insync.replicas ELR needs (elrSafetyRecords).
// kraft.version belongs to the quorum: an upgrade is handed to it with a
// NoOp record to wait on (Log.ProposeKRaftUpgrade), and it never goes down.
func (c *Core) UpdateFeatures(now time.Time, req *kmsg.UpdateFeaturesRequest, answer func(*kmsg.UpdateFeaturesResponse, error)) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	var failure *Error
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		var recs []metadata.Record
		var upgrade *kraftUpgrade
		seen := map[string]bool{}
		for _, u := range req.FeatureUpdates {
			if seen[u.Feature] {
				failure = apiErr(kerr.InvalidRequest.Code, "Feature %s appears more than once in the request.", u.Feature)
				return nil, nil
			}
			seen[u.Feature] = true
			typ := u.UpgradeType
			if req.Version == 0 {
				typ = upgradeUpgrade
				if u.AllowDowngrade {
					typ = upgradeSafeDowngrade
				}
			}
			rec, err := c.featureUpdate(im, u.Feature, u.MaxVersionLevel, typ)
			if err != nil {
				failure = err
				return nil, nil
			}
			if _, ok := rec.(*metadata.NoOpRecord); ok {
				upgrade = &kraftUpgrade{version: u.MaxVersionLevel, validateOnly: req.ValidateOnly}
			} else if rec != nil {
				recs = append(recs, rec)
			}
		}
		if !req.ValidateOnly && asksForELR(req) {
			recs = append(c.elrSafetyRecords(im), recs...)
		}
		if upgrade != nil {
			// The quorum checks the upgrade (even validate-only) on its
			// own loop; the NoOp is what the answer waits on.
			c.kraftUpgrade = upgrade
			if req.ValidateOnly {
				recs = nil
			}
			return append(recs, &metadata.NoOpRecord{}), nil
		}
		if req.ValidateOnly {
			return nil, nil
		}
		return recs, nil
	}, func(_ written, err error) {
		var refused *KRaftRefusal
		if errors.As(err, &refused) {
			failure, err = refused.Err, nil
		}
		if err != nil {
			answer(nil, err)
			return
		}
		if failure != nil {
			// As Apache's QuorumController words the answer.
			msg := "The update failed for all features since the following feature had an error: " + failure.Message
			resp.ErrorCode, resp.ErrorMessage = failure.Code, &msg
		}
		if req.Version < 2 {
			for _, u := range req.FeatureUpdates {
				r := kmsg.NewUpdateFeaturesResponseResult()
				r.Feature = u.Feature
				if failure != nil {
					r.ErrorCode, r.ErrorMessage = failure.Code, &failure.Message
				}
				resp.Results = append(resp.Results, r)
			}
		}
		answer(resp, nil)
	})
}

// featureUpdate checks one update and returns its record: a
// FeatureLevelRecord, a NoOpRecord for an upgrade of kraft.version that the
// quorum must make, or nil when nothing changes.
func (c *Core) featureUpdate(im *metadata.Image, name string, level int16, typ int8) (metadata.Record, *Error) {
	invalid := func(format string, args ...any) *Error {
		return apiErr(kerr.InvalidUpdateVersion.Code, "Invalid update version %d for feature %s. "+format, append([]any{level, name}, args...)...)
	}
	// The checks and their words follow Apache's
	// FeatureControlManager.updateFeature, in its order: the upgrade type,
	// the level's sign, then support by this controller, every registered
	// broker and every other registered controller, then the direction.
	if typ < upgradeUpgrade || typ > upgradeUnsafeDowngrade {
		return nil, invalid("The controller does not support the given upgrade type.")
	}
	if level < 0 {
		return nil, invalid("A feature version cannot be less than 0.")
	}
	if reason := c.reasonNotSupported(im, name, level); reason != "" {
		return nil, invalid("%s", reason)
	}
	current := c.finalized(im)[name]
	switch {
	case level < current && typ == upgradeUpgrade:
		return nil, invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case level > current && typ != upgradeUpgrade:
		return nil, invalid("Can't downgrade to a newer version.")
	}
	if name == MetadataVersionFeature && level < current && MetadataChangedBetween(level, current) {
		// Apache 4.4's words (FeatureControlManager.updateMetadataVersion);
		// a downgrade across levels that changed no record is let through.
		refusal := "Refusing to perform the requested downgrade because it might delete metadata information."
		if typ == upgradeUnsafeDowngrade {
			refusal = "Unsafe metadata downgrade is not supported in this version."
		}
		return nil, apiErr(kerr.InvalidUpdateVersion.Code, "Unsupported metadata.version downgrade from %d to %d. %s", current, level, refusal)
	}
	if name == KRaftVersionFeature && level < current {
		return nil, invalid("Can't downgrade the version of this feature.")
	}
	if level == current {
		return nil, nil
	}
	if name == KRaftVersionFeature {
		return &metadata.NoOpRecord{}, nil
	}
	return &metadata.FeatureLevelRecord{Name: name, FeatureLevel: level}, nil
}

// reasonNotSupported says why level of feature name is not supported by
// this controller, a registered broker or another registered controller
// (from 3.7-IV0, when controllers register), or "" when all support it. A
// feature a node does not list counts as supporting level 0 only (Apache's
// QuorumFeatures.reasonNotSupported and its DISABLED range).
func (c *Core) reasonNotSupported(im *metadata.Image, name string, level int16) string {
	local := FeatureRange{Name: name}
	if i := slices.IndexFunc(SupportedFeatures, func(f FeatureRange) bool { return f.Name == name }); i >= 0 {
		local = SupportedFeatures[i]
	}
	if r := supportReason(fmt.Sprintf("Local controller %d", c.settings.NodeID), local.Min, local.Max, level); r != "" {
		return r
	}
	for _, id := range sortedBrokerIDs(im) {
		lo, hi := int16(0), int16(0)
		for _, f := range im.Brokers[id].Features {
			if f.Name == name {
				lo, hi = f.MinSupportedVersion, f.MaxSupportedVersion
			}
		}
		if r := supportReason(fmt.Sprintf("Broker %d", id), lo, hi, level); r != "" {
			return r
		}
	}
	if metadataVersion(im) < MVControllerRegistration {
		return ""
	}
	for _, id := range slices.Sorted(maps.Keys(im.Controllers)) {
		if id == c.settings.NodeID {
			continue
		}
		lo, hi := int16(0), int16(0)
		for _, f := range im.Controllers[id].Features {
			if f.Name == name {
				lo, hi = f.MinSupportedVersion, f.MaxSupportedVersion
			}
		}
		if r := supportReason(fmt.Sprintf("Controller %d", id), lo, hi, level); r != "" {
			return r
		}
	}
	return ""
}

// supportReason is Apache's wording for a node whose range lo-hi lacks
// level, or "" when the range holds it.
func supportReason(who string, lo, hi, level int16) string {
	switch {
	case level >= lo && level <= hi:
		return ""
	case hi == 0:
		return who + " does not support this feature."
	case lo == hi:
		return fmt.Sprintf("%s only supports versions %d", who, lo)
	}
	return fmt.Sprintf("%s only supports versions %d-%d", who, lo, hi)
}

func sortedBrokerIDs(im *metadata.Image) []int32 {
	ids := make([]int32, 0, len(im.Brokers))
	for id := range im.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
