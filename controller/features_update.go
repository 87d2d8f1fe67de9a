package controller

import (
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
func (c *Core) UpdateFeatures(now time.Time, req *kmsg.UpdateFeaturesRequest, answer func(*kmsg.UpdateFeaturesResponse, error)) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	var failure *Error
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		var recs []metadata.Record
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
			if rec != nil {
				recs = append(recs, rec)
			}
		}
		if req.ValidateOnly {
			return nil, nil
		}
		return recs, nil
	}, func(_ written, err error) {
		if err != nil {
			answer(nil, err)
			return
		}
		if failure != nil {
			resp.ErrorCode, resp.ErrorMessage = failure.Code, &failure.Message
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

func (c *Core) featureUpdate(im *metadata.Image, name string, level int16, typ int8) (*metadata.FeatureLevelRecord, *Error) {
	invalid := func(format string, args ...any) *Error {
		return apiErr(kerr.InvalidUpdateVersion.Code, "Invalid update version %d for feature %s. "+format, append([]any{level, name}, args...)...)
	}
	if typ < upgradeUpgrade || typ > upgradeUnsafeDowngrade {
		return nil, apiErr(kerr.InvalidRequest.Code, "Unknown upgrade type %d for feature %s.", typ, name)
	}
	i := slices.IndexFunc(SupportedFeatures, func(f FeatureRange) bool { return f.Name == name })
	if i < 0 {
		return nil, invalid("The controller does not support the given feature.")
	}
	supported := SupportedFeatures[i]
	current := c.finalized(im)[name]
	if name == MetadataVersionFeature && level < MinMetadataVersion {
		return nil, invalid("metadata.version must be at least %d.", MinMetadataVersion)
	}
	if level < supported.Min || level > supported.Max {
		return nil, invalid("The controller only supports versions %d to %d.", supported.Min, supported.Max)
	}
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
	if name == KRaftVersionFeature && level != current {
		return nil, invalid("kraftd does not change kraft.version yet.")
	}
	if level == current {
		return nil, nil
	}
	for _, id := range sortedBrokerIDs(im) {
		b := im.Brokers[id]
		lo, hi, ok := int16(0), int16(0), false
		for _, f := range b.Features {
			if f.Name == name {
				lo, hi, ok = f.MinSupportedVersion, f.MaxSupportedVersion, true
			}
		}
		if (ok || level != 0) && (level < lo || level > hi) {
			return nil, invalid("Broker %d does not support this feature.", id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(im.Controllers)) {
		ctl := im.Controllers[id]
		lo, hi := int16(0), int16(0)
		for _, f := range ctl.Features {
			if f.Name == name {
				lo, hi = f.MinSupportedVersion, f.MaxSupportedVersion
			}
		}
		if level < lo || level > hi {
			return nil, invalid("Controller %d does not support this feature.", id)
		}
	}
	return &metadata.FeatureLevelRecord{Name: name, FeatureLevel: level}, nil
}

func sortedBrokerIDs(im *metadata.Image) []int32 {
	ids := make([]int32, 0, len(im.Brokers))
	for id := range im.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
