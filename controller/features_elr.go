package controller

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// asksForELR reports whether an UpdateFeatures request sets
// eligible.leader.replicas.version above 0, whatever its level was: Apache
// 4.4's ConfigurationControlManager.updateFeatures then adds the ELR
// safety records, even when ELR was on already.
func asksForELR(req *kmsg.UpdateFeaturesRequest) bool {
	return slices.ContainsFunc(req.FeatureUpdates, func(u kmsg.UpdateFeaturesRequestFeatureUpdate) bool {
		return u.Feature == ELRFeature && u.MaxVersionLevel > 0
	})
}

// elrSafetyRecords are the config records that go before the feature
// levels of a request that turns ELR on (Apache 4.4's
// maybeGenerateElrSafetyRecords): with ELR on, a partition's leader is
// chosen by the cluster-wide min.insync.replicas, so the cluster must have
// one (the node's static value, else 1) and no broker may override it.
func (c *Core) elrSafetyRecords(im *metadata.Image) []metadata.Record {
	const key = "min.insync.replicas"
	var recs []metadata.Record
	if _, ok := im.Configs[metadata.ConfigResource{ResourceType: resourceTypeBroker}][key]; !ok {
		value := "1"
		if n, err := strconv.Atoi(c.ctl.static[key]); err == nil && n >= 1 {
			value = strconv.Itoa(n)
		}
		recs = append(recs, &metadata.ConfigRecord{ResourceType: resourceTypeBroker, Name: key, Value: &value})
	}
	var brokers []int
	for r, configs := range im.Configs {
		if _, ok := configs[key]; ok && r.ResourceType == resourceTypeBroker && r.Name != "" {
			if id, err := strconv.Atoi(r.Name); err == nil {
				brokers = append(brokers, id)
			}
		}
	}
	slices.Sort(brokers)
	for _, id := range brokers {
		recs = append(recs, &metadata.ConfigRecord{ResourceType: resourceTypeBroker, ResourceName: strconv.Itoa(id), Name: key})
	}
	return recs
}
