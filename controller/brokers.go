package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// BrokerRegistrationChangeRecord encodes its tri-state fields as int8:
// 1 sets the flag, -1 clears it (fenced only), 0 leaves it.
const (
	changeFence   int8 = 1
	changeUnfence int8 = -1
)

// RegisterBroker handles BrokerRegistration (Apache's
// ClusterControlManager.registerBroker). A new incarnation gets a new broker
// epoch, the offset of the first record written for it, and starts fenced; a
// retry from the same incarnation amends the registration and keeps the
// epoch and fencing state.
func (c *Core) RegisterBroker(now time.Time, req *kmsg.BrokerRegistrationRequest, answer func(epoch int64, err error)) {
	var reg *metadata.RegisterBrokerRecord
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		recs, r, err := c.registration(im, req)
		reg = r
		return recs, err
	}, func(_ written, err error) {
		if err != nil {
			answer(-1, err)
			return
		}
		answer(reg.BrokerEpoch, nil)
	})
}

func (c *Core) registration(im *metadata.Image, req *kmsg.BrokerRegistrationRequest) ([]metadata.Record, *metadata.RegisterBrokerRecord, error) {
	if req.ClusterID != c.settings.ClusterID {
		return nil, nil, apiErr(kerr.InconsistentClusterID.Code, "Expected cluster ID %s, but got cluster ID %s", c.settings.ClusterID, req.ClusterID)
	}
	now := c.now
	id := req.BrokerID
	existing, had := im.Brokers[id]
	incarnation := metadata.Uuid(req.IncarnationID)
	if had && existing.IncarnationId != incarnation && c.sessions.valid(id, existing.BrokerEpoch, now) {
		return nil, nil, apiErr(kerr.DuplicateBrokerRegistration.Code, "Another broker is registered with that broker id. If the broker was recently restarted this should self-resolve once the heartbeat manager expires the broker's session.")
	}
	if req.IsMigratingZkBroker {
		return nil, nil, apiErr(kerr.BrokerIDNotRegistered.Code, "Controller does not support registering ZK brokers.")
	}
	mv := metadataVersion(im)
	if mv >= MVDirectoryAssignment {
		if err := checkLogDirs(im, id, req.LogDirs); err != nil {
			return nil, nil, err
		}
	}
	rec := &metadata.RegisterBrokerRecord{BrokerId: id, IncarnationId: incarnation, Rack: req.Rack, BrokerEpoch: -1, Fenced: true}
	rec.SetVersion(registerBrokerRecordVersion(mv))
	for _, l := range req.Listeners {
		rec.EndPoints = append(rec.EndPoints, metadata.RegisterBrokerRecordBrokerEndpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	finalized := c.finalized(im)
	unverified := maps2set(finalized)
	hasMV := false
	for _, f := range req.Features {
		if err := checkFeatureSupported(finalized, f.Name, f.MinSupportedVersion, f.MaxSupportedVersion); err != nil {
			return nil, nil, err
		}
		rec.Features = append(rec.Features, metadata.RegisterBrokerRecordBrokerFeature{Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
		delete(unverified, f.Name)
		hasMV = hasMV || f.Name == MetadataVersionFeature
	}
	if !hasMV {
		return nil, nil, apiErr(kerr.InvalidRegistration.Code, "Request features do not contain '%s'", MetadataVersionFeature)
	}
	for _, name := range sortedNames(unverified) {
		if finalized[name] != 0 {
			if err := checkFeatureSupported(finalized, name, 0, 0); err != nil {
				return nil, nil, err
			}
		}
	}
	if mv >= MVDirectoryAssignment {
		for _, d := range req.LogDirs {
			rec.LogDirs = append(rec.LogDirs, metadata.Uuid(d))
		}
	}
	var recs []metadata.Record
	if !had || existing.IncarnationId != incarnation {
		// A new incarnation: the old one's partitions lose it from their ISR
		// first (as for a fenced broker, or an unclean shutdown with ELR).
		if had {
			clean := req.Version >= 3 && existing.BrokerEpoch == req.PreviousBrokerEpoch
			recs = c.shutdownRecords(im, id, clean)
		}
		c.sessions.remove(id)
	} else {
		rec.Fenced, rec.InControlledShutdown, rec.BrokerEpoch = existing.Fenced, existing.InControlledShutdown, existing.BrokerEpoch
	}
	recs = append(recs, rec)
	return recs, rec, nil
}

// checkLogDirs validates the directories a broker registers with: some,
// none reserved or repeated, none another broker's.
func checkLogDirs(im *metadata.Image, id int32, dirs [][16]byte) *Error {
	if len(dirs) == 0 {
		return apiErr(kerr.InvalidRegistration.Code, "No directories specified in request")
	}
	seen := map[metadata.Uuid]bool{}
	for _, d := range dirs {
		dir := metadata.Uuid(d)
		if reservedDir(dir) {
			return apiErr(kerr.InvalidRegistration.Code, "Reserved directory ID in request")
		}
		if seen[dir] {
			return apiErr(kerr.InvalidRegistration.Code, "Duplicate directory ID in request")
		}
		seen[dir] = true
	}
	// The lowest conflicting broker answers, whatever the map's order, so
	// that the answer is a function of the image.
	conflict, conflictDir := int32(-1), metadata.Uuid{}
	for other, b := range im.Brokers {
		if other == id || (conflict >= 0 && other > conflict) {
			continue
		}
		for _, d := range b.LogDirs {
			if seen[d] {
				conflict, conflictDir = other, d
				break
			}
		}
	}
	if conflict >= 0 {
		return apiErr(kerr.InvalidRegistration.Code, "Broker %d is already registered with directory %v", conflict, conflictDir)
	}
	return nil
}

// shutdownRecords remove a broker that went away from every ISR (Apache's
// ReplicationControlManager.handleBrokerShutdown).
func (c *Core) shutdownRecords(im *metadata.Image, id int32, clean bool) []metadata.Record {
	if elrEnabled(im) && !clean {
		recs := leaderAndIsrUpdates(im, noLeader, noLeader, id, c.settings, replicaPartitions(im, id), inIsr(id))
		return append(recs, leaderAndIsrUpdates(im, noLeader, noLeader, id, c.settings, replicaPartitions(im, id), inElr(id))...)
	}
	return leaderAndIsrUpdates(im, id, noLeader, noLeader, c.settings, replicaPartitions(im, id), inIsr(id))
}

// finalized is the finalized feature levels, with kraft.version as the
// quorum has it.
func (c *Core) finalized(im *metadata.Image) map[string]int16 {
	out := map[string]int16{}
	for k, v := range im.Features {
		out[k] = v
	}
	if kv := c.kraftVersion(); kv > 0 {
		out[KRaftVersionFeature] = kv
	}
	return out
}

// kraftVersion is the quorum's kraft.version, as SetQuorum last gave it.
func (c *Core) kraftVersion() int16 { return c.quorum.KRaftVersion }

func checkFeatureSupported(finalized map[string]int16, name string, lo, hi int16) error {
	level := finalized[name]
	if level < lo || level > hi {
		return apiErr(kerr.UnsupportedVersion.Code, "Unable to register because the broker does not support finalized version %d of %s. The broker wants a version between %d and %d, inclusive.", level, name, lo, hi)
	}
	return nil
}

// BrokerHeartbeat handles BrokerHeartbeat (Apache's
// ReplicationControlManager.processBrokerHeartbeat).
//
// One that writes nothing, nearly every heartbeat of a steady fleet, is
// answered from the image once what it read has committed, with no proof
// of leadership (execFromImage), as Apache answers it. A deposed leader
// may so tell a broker it is still unfenced until check-quorum deposes it;
// the broker's partitions and state come from the log, which such a leader
// can no longer extend. A NoOp for each would cost a commit, three fsyncs
// and a Fetch answer to every observer per few heartbeats: 400 of each a
// second for 1,000 brokers.
func (c *Core) BrokerHeartbeat(now time.Time, req *kmsg.BrokerHeartbeatRequest, answer func(*kmsg.BrokerHeartbeatResponse, error)) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	var next brokerState
	c.execFromImage(now, func(im *metadata.Image) ([]metadata.Record, error) {
		b, ok := im.Brokers[req.BrokerID]
		if !ok {
			return nil, apiErr(kerr.StaleBrokerEpoch.Code, "No broker registration found for broker id %d", req.BrokerID)
		}
		if b.BrokerEpoch != req.BrokerEpoch {
			return nil, apiErr(kerr.StaleBrokerEpoch.Code, "Expected broker epoch %d, but got broker epoch %d", b.BrokerEpoch, req.BrokerEpoch)
		}
		id := req.BrokerID
		cur := stateUnfenced
		switch {
		case b.Fenced:
			cur = stateFenced
		case b.InControlledShutdown:
			cur = stateControlledShutdown
		}
		registerOffset := c.ctl.registerOffset(id)
		in := heartbeatIntent{wantFence: req.WantFence, wantShutDown: req.WantShutdown, metadataOffset: req.CurrentMetadataOffset}
		next = nextBrokerState(cur, in, registerOffset, func() bool { return leadsAny(im, id) },
			c.sessions.shutdownOffset(id), c.sessions.lowestActiveOffset) // a scan of every session: only a broker in controlled shutdown needs it
		var recs []metadata.Record
		if next != cur {
			switch next {
			case stateFenced, stateShutdownNow:
				recs = c.fenceRecords(im, id)
			case stateUnfenced:
				recs = c.unfenceRecords(im, id, b.BrokerEpoch)
			case stateControlledShutdown:
				recs = c.controlledShutdownRecords(im, id, b)
			}
		} else if metadataVersion(im) >= MVDirectoryAssignment {
			// Failed directories wait for a heartbeat that changes nothing
			// else (the broker lists them in every one): records of both
			// kinds computed from one image could undo each other's
			// partition changes.
			recs = c.offlineDirRecords(im, b, req.OfflineLogDirs)
		}
		recs = append(recs, cordonedDirRecords(im, b, req.CordonedLogDirs)...)
		c.sessions.touch(id, b.BrokerEpoch, next.fenced(), req.CurrentMetadataOffset, c.now)
		resp.IsCaughtUp = req.CurrentMetadataOffset >= registerOffset
		return recs, nil
	}, func(out written, err error) {
		if err != nil {
			answer(nil, err)
			return
		}
		if next == stateControlledShutdown && c.sessions != nil {
			// Every active broker must reach the end of what this heartbeat
			// wrote (the leader moves) before this one may stop; when it
			// wrote nothing (a new controller meeting a broker already
			// shutting down), the end of the log it read: the last pending
			// write, else the committed log (Apache's processBatchEndOffset).
			end := out.last
			if end < 0 {
				end = c.ctl.Applied()
			}
			c.sessions.setShutdownOffset(req.BrokerID, end)
		}
		resp.IsFenced = next.fenced()
		resp.ShouldShutdown = next == stateShutdownNow
		answer(resp, nil)
	})
}

// fenceRecords fences a broker: it leaves every ISR it can leave, loses its
// leaderships, and is marked fenced (Apache's handleBrokerFenced).
func (c *Core) fenceRecords(im *metadata.Image, id int32) []metadata.Record {
	recs := leaderAndIsrUpdates(im, id, noLeader, noLeader, c.settings, replicaPartitions(im, id), inIsr(id))
	return append(recs, &metadata.BrokerRegistrationChangeRecord{BrokerId: id, BrokerEpoch: im.Brokers[id].BrokerEpoch, Fenced: changeFence})
}

// unfenceRecords unfences a broker and gives leaderless partitions whose
// ISR holds it a leader again (Apache's handleBrokerUnfenced).
func (c *Core) unfenceRecords(im *metadata.Image, id int32, epoch int64) []metadata.Record {
	recs := []metadata.Record{&metadata.BrokerRegistrationChangeRecord{BrokerId: id, BrokerEpoch: epoch, Fenced: changeUnfence}}
	return append(recs, leaderAndIsrUpdates(im, noLeader, id, noLeader, c.settings, slices.Values(im.LeaderlessPartitions()), leaderless)...)
}

// controlledShutdownRecords mark a broker as shutting down and move its
// leaderships and ISR memberships away.
func (c *Core) controlledShutdownRecords(im *metadata.Image, id int32, b metadata.RegisterBrokerRecord) []metadata.Record {
	var recs []metadata.Record
	if !b.InControlledShutdown {
		r := &metadata.BrokerRegistrationChangeRecord{BrokerId: id, BrokerEpoch: b.BrokerEpoch, InControlledShutdown: 1}
		r.SetVersion(1)
		recs = append(recs, r)
	}
	return append(recs, leaderAndIsrUpdates(im, id, noLeader, noLeader, c.settings, replicaPartitions(im, id), inIsr(id))...)
}

// FenceStaleBrokers fences at most one broker whose session has expired,
// one at a time as Apache does so that each fencing's effect is visible to
// the next. It answers whether it fenced one (call again if so).
func (c *Core) FenceStaleBrokers(now time.Time, answer func(fenced bool, err error)) {
	fenced := false
	c.execFromImage(now, func(im *metadata.Image) ([]metadata.Record, error) {
		for _, id := range c.sessions.expired(c.now) {
			b, ok := im.Brokers[id]
			if !ok {
				c.sessions.remove(id)
				continue
			}
			c.sessions.fence(id)
			if b.Fenced {
				continue
			}
			fenced = true
			return c.fenceRecords(im, id), nil
		}
		return nil, nil
	}, func(_ written, err error) { answer(fenced && err == nil, err) })
}

// UnregisterBroker removes a broker's registration (UnregisterBroker).
func (c *Core) UnregisterBroker(now time.Time, id int32, answer func(error)) {
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		b, ok := im.Brokers[id]
		if !ok {
			return nil, apiErr(kerr.BrokerIDNotRegistered.Code, "Broker ID %d is not currently registered", id)
		}
		recs := leaderAndIsrUpdates(im, id, noLeader, noLeader, c.settings, replicaPartitions(im, id), inIsr(id))
		recs = append(recs, leaderAndIsrUpdates(im, id, noLeader, noLeader, c.settings, replicaPartitions(im, id), inElr(id))...)
		c.sessions.remove(id)
		return append(recs, &metadata.UnregisterBrokerRecord{BrokerId: id, BrokerEpoch: b.BrokerEpoch}), nil
	}, func(_ written, err error) { answer(err) })
}

// RegisterController handles ControllerRegistration: it records a
// controller's listeners and supported features.
func (c *Core) RegisterController(now time.Time, req *kmsg.ControllerRegistrationRequest, answer func(error)) {
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		if metadataVersion(im) < MVControllerRegistration {
			return nil, apiErr(kerr.UnsupportedVersion.Code, "The current MetadataVersion is too old to support controller registrations.")
		}
		rec := &metadata.RegisterControllerRecord{ControllerId: req.ControllerID, IncarnationId: metadata.Uuid(req.IncarnationID)}
		for _, l := range req.Listeners {
			rec.EndPoints = append(rec.EndPoints, metadata.RegisterControllerRecordControllerEndpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
		}
		for _, f := range req.Features {
			rec.Features = append(rec.Features, metadata.RegisterControllerRecordControllerFeature{Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
		}
		if old, ok := im.Controllers[req.ControllerID]; ok && sameRegistration(&old, rec) {
			return nil, nil
		}
		return []metadata.Record{rec}, nil
	}, func(_ written, err error) { answer(err) })
}

func sameRegistration(a, b *metadata.RegisterControllerRecord) bool {
	return a.IncarnationId == b.IncarnationId && fmt.Sprint(a.EndPoints) == fmt.Sprint(b.EndPoints) && fmt.Sprint(a.Features) == fmt.Sprint(b.Features)
}

// ControllerRegistered reports whether the image holds this incarnation of
// controller id (so it need not register again).
func (c *Controller) ControllerRegistered(id int32, incarnation [16]byte) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.image.Controllers[id]
	return ok && r.IncarnationId == metadata.Uuid(incarnation)
}

// MetadataVersion is the finalized metadata.version of the image (0 before
// the bootstrap records are replayed).
func (c *Controller) MetadataVersion() int16 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return metadataVersion(c.image)
}

// producerIDBlockSize is how many producer ids one AllocateProducerIds
// hands out (Apache's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const producerIDBlockSize = 1000

// AllocateProducerIDs hands the next block of producer ids to a broker.
func (c *Core) AllocateProducerIDs(now time.Time, brokerID int32, brokerEpoch int64, answer func(start int64, length int32, err error)) {
	var start int64
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		b, ok := im.Brokers[brokerID]
		if !ok {
			return nil, apiErr(kerr.StaleBrokerEpoch.Code, "No broker registration found for broker id %d", brokerID)
		}
		if b.BrokerEpoch != brokerEpoch {
			return nil, apiErr(kerr.StaleBrokerEpoch.Code, "Expected broker epoch %d, but got broker epoch %d", b.BrokerEpoch, brokerEpoch)
		}
		start = im.ProducerIDs.NextProducerId
		if start > (1<<63-1)-producerIDBlockSize {
			return nil, apiErr(kerr.UnknownServerError.Code, "Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit")
		}
		return []metadata.Record{&metadata.ProducerIdsRecord{BrokerId: brokerID, BrokerEpoch: brokerEpoch, NextProducerId: start + producerIDBlockSize}}, nil
	}, func(_ written, err error) {
		if err != nil {
			answer(-1, 0, err)
			return
		}
		answer(start, producerIDBlockSize, nil)
	})
}

func maps2set(m map[string]int16) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
