package controller

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// AlterPartition handles AlterPartition v2-3 from partition leaders: ISR
// expansion and shrinking, checked against the partition's leader and
// partition epochs and, at v3, the epochs of the brokers joining the ISR
// (Apache's ReplicationControlManager.alterPartition).
func (c *Core) AlterPartition(now time.Time, req *kmsg.AlterPartitionRequest, answer func(*kmsg.AlterPartitionResponse, error)) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		resp.Topics = nil
		b, ok := im.Brokers[req.BrokerID]
		if !ok || b.BrokerEpoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return nil, nil
		}
		var recs []metadata.Record
		for _, rt := range req.Topics {
			out := kmsg.NewAlterPartitionResponseTopic()
			out.TopidID = rt.TopicID
			t, ok := im.Topics[metadata.Uuid(rt.TopicID)]
			for _, rp := range rt.Partitions {
				res := kmsg.NewAlterPartitionResponseTopicPartition()
				res.Partition = rp.Partition
				if !ok || rt.TopicID == [16]byte{} {
					res.ErrorCode = kerr.UnknownTopicID.Code
					out.Partitions = append(out.Partitions, res)
					continue
				}
				isr := newIsrWithEpochs(req.Version, &rp)
				if code := validateAlterPartition(im, req.BrokerID, t, &rp, isr); code != 0 {
					res.ErrorCode = code
					out.Partitions = append(out.Partitions, res)
					continue
				}
				p := t.Partitions[rp.Partition]
				change := newPartitionChange(im, t, rp.Partition, func(r int32) bool { return brokerActive(im, r) })
				if uncleanElectionEnabled(im, t.Name, c.settings) {
					change.election = electUnclean
				}
				change.targetIsr = make([]int32, len(isr))
				for i, s := range isr {
					change.targetIsr[i] = s.BrokerID
				}
				change.targetRecovery = rp.LeaderRecoveryState
				if rec := change.build(); rec != nil {
					recs = append(recs, rec)
					p = mergeChange(p, rec)
					if rec.Leader != req.BrokerID && rec.Leader != noLeaderChange {
						res.ErrorCode = kerr.NewLeaderElected.Code
						out.Partitions = append(out.Partitions, res)
						continue
					}
				}
				res.LeaderID, res.ISR, res.LeaderRecoveryState = p.Leader, p.Isr, p.LeaderRecoveryState
				res.LeaderEpoch, res.PartitionEpoch = p.LeaderEpoch, p.PartitionEpoch
				out.Partitions = append(out.Partitions, res)
			}
			resp.Topics = append(resp.Topics, out)
		}
		return recs, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

type isrMember struct {
	BrokerID    int32
	BrokerEpoch int64
}

// newIsrWithEpochs reads the proposed ISR; before v3 there are no broker
// epochs (-1 means "do not check").
func newIsrWithEpochs(version int16, p *kmsg.AlterPartitionRequestTopicPartition) []isrMember {
	var out []isrMember
	if version < 3 {
		for _, id := range p.NewISR {
			out = append(out, isrMember{id, -1})
		}
		return out
	}
	for _, m := range p.NewEpochISR {
		out = append(out, isrMember{m.BrokerID, m.BrokerEpoch})
	}
	return out
}

func validateAlterPartition(im *metadata.Image, broker int32, t *metadata.Topic, rp *kmsg.AlterPartitionRequestTopicPartition, isr []isrMember) int16 {
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) || !t.Partitions[rp.Partition].Exists {
		return kerr.UnknownTopicOrPartition.Code
	}
	p := t.Partitions[rp.Partition]
	switch {
	case rp.LeaderEpoch > p.LeaderEpoch, rp.PartitionEpoch > p.PartitionEpoch:
		// The leader knows a newer state than this controller: it is not
		// (or no longer) the active one.
		return kerr.NotController.Code
	case rp.LeaderEpoch < p.LeaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	case broker != p.Leader:
		return kerr.InvalidRequest.Code
	case rp.PartitionEpoch < p.PartitionEpoch:
		return kerr.InvalidUpdateVersion.Code
	}
	ids := make([]int32, len(isr))
	for i, m := range isr {
		ids[i] = m.BrokerID
	}
	if len(ids) == 0 || !containsAll(p.Replicas, ids) || hasDuplicates(ids) || !slices.Contains(ids, p.Leader) {
		return kerr.InvalidRequest.Code
	}
	if rp.LeaderRecoveryState == recovering && len(ids) > 1 {
		return kerr.InvalidRequest.Code
	}
	if p.LeaderRecoveryState == recovered && rp.LeaderRecoveryState == recovering {
		return kerr.InvalidRequest.Code
	}
	for _, m := range isr {
		b, ok := im.Brokers[m.BrokerID]
		if !ok || b.Fenced || b.InControlledShutdown || (m.BrokerEpoch != -1 && m.BrokerEpoch != b.BrokerEpoch) {
			return kerr.IneligibleReplica.Code
		}
	}
	return 0
}

func hasDuplicates(ids []int32) bool {
	s := slices.Clone(ids)
	slices.Sort(s)
	return len(slices.Compact(s)) != len(ids)
}

// mergeChange is what the image will hold once rec is applied.
func mergeChange(p metadata.Partition, rec *metadata.PartitionChangeRecord) metadata.Partition {
	if rec.Isr != nil {
		p.Isr = rec.Isr
	}
	if rec.Leader != noLeaderChange {
		p.Leader = rec.Leader
		p.LeaderEpoch++
	}
	if rec.LeaderRecoveryState != -1 {
		p.LeaderRecoveryState = rec.LeaderRecoveryState
	}
	p.PartitionEpoch++
	return p
}

// Election types of ElectLeaders.
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

// ElectLeaders handles ElectLeaders: preferred or unclean elections for the
// named partitions, or for every partition when none are named (then only
// partitions that needed an election are reported).
func (c *Core) ElectLeaders(now time.Time, req *kmsg.ElectLeadersRequest, answer func(*kmsg.ElectLeadersResponse, error)) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.ElectionType != electionPreferred && req.ElectionType != electionUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		answer(resp, nil)
		return
	}
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		resp.Topics = nil
		var recs []metadata.Record
		all := req.Topics == nil
		type target struct {
			topic string
			parts []int32
		}
		var targets []target
		if all {
			for _, id := range sortedTopicIDs(im) {
				t := im.Topics[id]
				tg := target{topic: t.Name}
				for i := range t.Partitions {
					if t.Partitions[i].Exists {
						tg.parts = append(tg.parts, int32(i))
					}
				}
				targets = append(targets, tg)
			}
		} else {
			for _, t := range req.Topics {
				targets = append(targets, target{t.Topic, t.Partitions})
			}
		}
		for _, tg := range targets {
			out := kmsg.NewElectLeadersResponseTopic()
			out.Topic = tg.topic
			for _, pid := range tg.parts {
				res := kmsg.NewElectLeadersResponseTopicPartition()
				res.Partition = pid
				e, rec := c.electOne(im, tg.topic, pid, req.ElectionType)
				if rec != nil {
					recs = append(recs, rec)
				}
				if e != nil {
					if all && e.Code == kerr.ElectionNotNeeded.Code {
						continue
					}
					res.ErrorCode, res.ErrorMessage = e.Code, &e.Message
				}
				out.Partitions = append(out.Partitions, res)
			}
			resp.Topics = append(resp.Topics, out)
		}
		return recs, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

// electOne runs one partition's election as Apache's
// ReplicationControlManager.electLeader does: ELECTION_NOT_NEEDED when
// the preferred replica already leads (PREFERRED) or there is a leader
// (UNCLEAN); otherwise whatever change the election makes succeeds, even
// a preferred election that could only move leadership to another
// replica because the leader was gone; no change at all is
// PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE.
func (c *Core) electOne(im *metadata.Image, topic string, pid int32, typ int8) (*Error, *metadata.PartitionChangeRecord) {
	id, ok := im.TopicIDs[topic]
	if !ok {
		return apiErr(kerr.UnknownTopicOrPartition.Code, "No such topic as %s", topic), nil
	}
	t := im.Topics[id]
	if pid < 0 || int(pid) >= len(t.Partitions) || !t.Partitions[pid].Exists {
		return apiErr(kerr.UnknownTopicOrPartition.Code, "No such partition as %s-%d", topic, pid), nil
	}
	p := t.Partitions[pid]
	preferred := noLeader
	if len(p.Replicas) > 0 {
		preferred = p.Replicas[0]
	}
	if (typ == electionPreferred && p.Leader == preferred) || (typ == electionUnclean && p.Leader != noLeader) {
		return defaultErr(kerr.ElectionNotNeeded), nil
	}
	change := newPartitionChange(im, t, pid, func(r int32) bool { return brokerActive(im, r) })
	if typ == electionPreferred {
		change.election = electPreferred
	} else {
		change.election = electUnclean
	}
	rec := change.build()
	if rec == nil {
		if typ == electionPreferred {
			return defaultErr(kerr.PreferredLeaderNotAvailable), nil
		}
		return defaultErr(kerr.EligibleLeadersNotAvailable), nil
	}
	return nil, rec
}

// defaultErr is an error with the standard message Apache's Errors gives
// its code, as ApiError(Errors) answers (franz-go's descriptions lack the
// final period).
func defaultErr(e *kerr.Error) *Error {
	msg := e.Description
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return &Error{Code: e.Code, Message: msg}
}
