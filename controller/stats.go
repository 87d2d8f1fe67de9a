package controller

import (
	"maps"
	"time"
)

// ClusterStats is what the committed image says about the cluster, as
// Apache's ControllerMetadataMetrics counts it: every controller, active
// or not, counts its own image.
type ClusterStats struct {
	// Brokers registered, by state: unfenced (active), fenced, and in
	// controlled shutdown (counted among the active or fenced too).
	ActiveBrokers, FencedBrokers, ControlledShutdownBrokers int
	Topics, Partitions                                      int
	// OfflinePartitions have no leader; ImbalancedPartitions are led by
	// another replica than their first (Apache counts an offline one too).
	OfflinePartitions, ImbalancedPartitions int
	// MetadataVersion is the finalized metadata.version level, 0 if none.
	MetadataVersion int16
	// Features are the finalized feature levels of the image
	// (metadata.version among them), for Apache's FinalizedLevel.
	Features map[string]int16
	// UncleanLeaderElections and ElectionsFromELR count the elections the
	// records replayed since start made (elections.go).
	UncleanLeaderElections, ElectionsFromELR int64
}

// Stats counts the committed image. It walks every partition under the
// image's read lock, which at a million partitions is some milliseconds
// that replay waits: meant for a scrape every few seconds, not for a hot
// path.
func (c *Controller) Stats() ClusterStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	im := c.image
	s := ClusterStats{Topics: len(im.Topics), MetadataVersion: metadataVersion(im), Features: maps.Clone(im.Features),
		UncleanLeaderElections: c.elections.unclean, ElectionsFromELR: c.elections.fromELR}
	for _, b := range im.Brokers {
		if b.Fenced {
			s.FencedBrokers++
		} else {
			s.ActiveBrokers++
		}
		if b.InControlledShutdown {
			s.ControlledShutdownBrokers++
		}
	}
	for _, t := range im.Topics {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if !p.Exists {
				continue
			}
			s.Partitions++
			if p.Leader == noLeader {
				s.OfflinePartitions++
			}
			preferred := int32(noLeader)
			if len(p.Replicas) > 0 {
				preferred = p.Replicas[0]
			}
			if p.Leader != preferred {
				s.ImbalancedPartitions++
			}
		}
	}
	return s
}

// HeartbeatAges is, on the active controller, how long ago each registered
// broker's last heartbeat arrived (Apache's per-broker
// TimeSinceLastHeartbeatReceivedMs); nil elsewhere.
func (c *Controller) HeartbeatAges() map[int32]time.Duration {
	var out map[int32]time.Duration
	c.run(func(core *Core, now time.Time) {
		if !core.Leading() || core.sessions == nil {
			return
		}
		out = make(map[int32]time.Duration, len(core.sessions.brokers))
		for id, b := range core.sessions.brokers {
			out[id] = now.Sub(b.lastContact)
		}
	})
	return out
}
