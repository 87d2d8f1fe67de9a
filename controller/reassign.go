package controller

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// Partition reassignment, as Apache's ReplicationControlManager runs it.
// A reassignment lives only in the partition's records, so it survives a
// change of active controller:
//
//  1. AlterPartitionReassignments writes a PartitionChangeRecord whose
//     replicas are the target followed by the replicas leaving it, with
//     addingReplicas and removingReplicas set.
//  2. The new replicas catch up and their leader adds them to the ISR
//     (AlterPartition).
//  3. The change that lets the ISR hold every adding replica (and, when
//     the replication factor shrinks, every target replica) drops the
//     removing replicas from the replicas and the ISR and clears both
//     lists; a leader that was removed hands leadership to the first
//     target replica in the ISR. Any partition change can be that one
//     (partitionChange.completeReassignment), as in Apache.
//
// Cancelling (null replicas) reverts to the original replicas, keeping
// the ISR members that were not being added.
//
// One deliberate difference from Apache (4.1 to 4.4 and trunk): a new
// target given while a reassignment is in flight. Apache computes the
// adding and removing lists against the replicas in flight and keeps the
// old list where the new one is empty: a target that keeps a replica
// being removed still removes it; one that drops a replica being added
// leaves it both adding and removing, which no ISR can complete (only a
// cancel ends it); one that adds another replica forgets those still
// being added, so the move may complete without them. Here the removing
// list is the replicas the new target lacks, and the adding list is the
// new target's replicas not in flight plus those still being added that
// it keeps. For a partition with no reassignment in flight, and for a
// target repeated (--execute --additional), both give Apache's records.

// defaultAssignment fills the target assignment with the partition's own
// where the caller set none.
func (b *partitionChange) defaultAssignment() {
	if b.targetReplicas == nil {
		b.targetReplicas = b.part.Replicas
	}
	if b.targetRemoving == nil {
		b.targetRemoving = orEmpty(b.part.RemovingReplicas())
	}
	if b.targetAdding == nil {
		b.targetAdding = orEmpty(b.part.AddingReplicas())
	}
}

// completeReassignment finishes the reassignment of the target
// assignment when the target ISR allows it (Apache's
// PartitionReassignmentReplicas.maybeCompleteReassignment, 4.3+ rules,
// KAFKA-19975: the adding replicas must all be in the ISR, and all target
// replicas too when the replication factor shrinks).
func (b *partitionChange) completeReassignment() {
	removing, adding := b.targetRemoving, b.targetAdding
	if len(removing) == 0 && len(adding) == 0 {
		return
	}
	isr, replicas := b.targetIsr, b.targetReplicas
	if len(removing) > 0 {
		isr = without(isr, removing)
		replicas = without(replicas, removing)
		if len(isr) == 0 || len(replicas) == 0 {
			return
		}
	}
	if !containsAll(isr, adding) {
		return
	}
	if len(adding) < len(removing) && !containsAll(isr, replicas) {
		return
	}
	b.targetIsr, b.targetReplicas = isr, replicas
	b.targetRemoving, b.targetAdding = []int32{}, []int32{}
}

// setAssignmentChanges puts the target assignment into rec where it
// differs from the partition's, with each replica's directory: the one it
// has, or its broker's default for a replica new to the partition.
func (b *partitionChange) setAssignmentChanges(rec *metadata.PartitionChangeRecord) {
	if len(b.targetReplicas) > 0 && !slices.Equal(b.targetReplicas, b.part.Replicas) {
		rec.Replicas = slices.Clone(b.targetReplicas)
		if b.dirOf != nil && b.mv >= MVDirectoryAssignment {
			rec.Directories = b.targetDirectories()
		}
	}
	if !slices.Equal(b.targetRemoving, orEmpty(b.part.RemovingReplicas())) {
		rec.RemovingReplicas = slices.Clone(b.targetRemoving)
	}
	if !slices.Equal(b.targetAdding, orEmpty(b.part.AddingReplicas())) {
		rec.AddingReplicas = slices.Clone(b.targetAdding)
	}
}

func (b *partitionChange) targetDirectories() []metadata.Uuid {
	old := b.part.Directories()
	dirs := make([]metadata.Uuid, len(b.targetReplicas))
	for i, r := range b.targetReplicas {
		j := slices.Index(b.part.Replicas, r)
		switch {
		case j >= 0 && j < len(old):
			dirs[i] = old[j]
		case j >= 0:
			dirs[i] = dirMigrating // the image keeps "all migrating" as none
		default:
			dirs[i] = b.dirOf(r)
		}
	}
	return dirs
}

func without(s, drop []int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, r := range s {
		if !slices.Contains(drop, r) {
			out = append(out, r)
		}
	}
	return out
}

func reassigning(p *metadata.Partition) bool {
	return len(p.RemovingReplicas()) > 0 || len(p.AddingReplicas()) > 0
}

// AlterPartitionReassignments handles AlterPartitionReassignments v0-1:
// for each named partition, start (or replace) a reassignment to the
// given replicas, or cancel the one in progress when the replicas are
// null. Each partition is answered on its own; all records go in one
// write.
func (c *Core) AlterPartitionReassignments(now time.Time, req *kmsg.AlterPartitionAssignmentsRequest, answer func(*kmsg.AlterPartitionAssignmentsResponse, error)) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	// The field is v1+, and true by default: a v0 request may change it.
	allowRFChange := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRFChange
	if len(req.Topics) == 0 {
		answer(resp, nil)
		return
	}
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		resp.Topics = nil
		var recs []metadata.Record
		for _, rt := range req.Topics {
			out := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			out.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				res := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				res.Partition = rp.Partition
				rec, err := c.reassignOne(im, rt.Topic, &rp, allowRFChange)
				if err != nil {
					res.ErrorCode = err.Code
					if err.Message != "" {
						res.ErrorMessage = &err.Message
					}
				} else if rec != nil {
					recs = append(recs, rec)
				}
				out.Partitions = append(out.Partitions, res)
			}
			resp.Topics = append(resp.Topics, out)
		}
		return recs, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

func (c *Core) reassignOne(im *metadata.Image, topic string, rp *kmsg.AlterPartitionAssignmentsRequestTopicPartition, allowRFChange bool) (*metadata.PartitionChangeRecord, *Error) {
	id, ok := im.TopicIDs[topic]
	if !ok {
		return nil, apiErr(kerr.UnknownTopicOrPartition.Code, "Unable to find a topic named %s.", topic)
	}
	t := im.Topics[id]
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) || !t.Partitions[rp.Partition].Exists {
		return nil, apiErr(kerr.UnknownTopicOrPartition.Code, "Unable to find partition %s:%d.", topic, rp.Partition)
	}
	p := t.Partitions[rp.Partition]
	change := newPartitionChange(im, t, rp.Partition, func(r int32) bool { return brokerActive(im, r) })
	if rp.Replicas == nil {
		return c.cancelReassignment(im, t, change)
	}
	if err := validateManualAssignment(im, rp.Replicas, -1); err != nil {
		return nil, err
	}
	if !allowRFChange {
		if n := reassignedSize(&p); n != len(rp.Replicas) {
			return nil, apiErr(kerr.InvalidReplicationFactor.Code, "The replication factor is changed from %d to %d", n, len(rp.Replicas))
		}
	}
	// Every replica of the partition now, in flight or not, that the
	// target lacks is removed; every target replica it lacks is added.
	removing := sortedDifference(p.Replicas, rp.Replicas)
	adding := sortedDifference(rp.Replicas, p.Replicas)
	replicas := append(slices.Clone(rp.Replicas), removing...)
	if !slices.Equal(replicas, p.Replicas) {
		change.targetReplicas = replicas
	}
	change.targetRemoving = removing
	// A replica still being added that the new target keeps is still
	// being added.
	change.targetAdding = sortedDifference(append(adding, intersect(p.AddingReplicas(), rp.Replicas)...), nil)
	return change.build(), nil
}

// intersect is the members of a that b holds, in a's order.
func intersect(a, b []int32) []int32 {
	out := []int32{}
	for _, r := range a {
		if slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

// cancelReassignment reverts a reassignment in progress (Apache's
// PartitionReassignmentRevert): the replicas being added leave the
// replicas and the ISR; should that empty the ISR, the first original
// replica is put back in it, which is an unclean election and needs
// unclean.leader.election.enable.
func (c *Core) cancelReassignment(im *metadata.Image, t *metadata.Topic, change *partitionChange) (*metadata.PartitionChangeRecord, *Error) {
	p := change.part
	if !reassigning(&p) {
		return nil, &Error{Code: kerr.NoReassignmentInProgress.Code}
	}
	adding := p.AddingReplicas()
	replicas := without(p.Replicas, adding)
	if len(replicas) == 0 {
		return nil, apiErr(kerr.InvalidReplicaAssignment.Code, "Invalid replica assignment: addingReplicas contains all replicas.")
	}
	isr := without(p.Isr, adding)
	unclean := uncleanElectionEnabled(im, t.Name, c.settings)
	if len(isr) == 0 {
		if !unclean {
			return nil, apiErr(kerr.InvalidReplicaAssignment.Code, "Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", t.Name, change.partition)
		}
		isr = []int32{replicas[0]}
	}
	if unclean {
		change.election = electUnclean
	}
	change.targetIsr, change.targetReplicas = isr, replicas
	change.targetRemoving, change.targetAdding = []int32{}, []int32{}
	return change.build(), nil
}

// reassignedSize is the replication factor a partition has, or will have
// once its reassignment completes.
func reassignedSize(p *metadata.Partition) int {
	if !reassigning(p) {
		return len(p.Replicas)
	}
	set := map[int32]bool{}
	for _, r := range p.Replicas {
		set[r] = true
	}
	for _, r := range p.AddingReplicas() {
		set[r] = true
	}
	for _, r := range p.RemovingReplicas() {
		delete(set, r)
	}
	return len(set)
}

// sortedDifference is a minus b, sorted and without duplicates.
func sortedDifference(a, b []int32) []int32 {
	out := []int32{}
	for _, r := range a {
		if !slices.Contains(b, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// ListPartitionReassignments handles ListPartitionReassignments v0 from the
// committed image, on any controller, as Apache reads it at the last
// stable offset: every reassigning partition when no topics are named,
// else the named partitions that are reassigning (unknown ones are left
// out).
func (c *Controller) ListPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	c.mu.RLock()
	defer c.mu.RUnlock()
	im := c.image
	list := func(t *metadata.Topic, parts []int32) {
		out := kmsg.NewListPartitionReassignmentsResponseTopic()
		out.Topic = t.Name
		for _, pid := range parts {
			if pid < 0 || int(pid) >= len(t.Partitions) {
				continue
			}
			p := &t.Partitions[pid]
			if !p.Exists || !reassigning(p) {
				continue
			}
			res := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			res.Partition, res.Replicas = pid, slices.Clone(p.Replicas)
			res.AddingReplicas = slices.Clone(orEmpty(p.AddingReplicas()))
			res.RemovingReplicas = slices.Clone(orEmpty(p.RemovingReplicas()))
			out.Partitions = append(out.Partitions, res)
		}
		if len(out.Partitions) > 0 {
			resp.Topics = append(resp.Topics, out)
		}
	}
	if req.Topics == nil {
		for _, id := range sortedTopicIDs(im) {
			t := im.Topics[id]
			all := make([]int32, len(t.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			list(t, all)
		}
		return resp
	}
	for _, rt := range req.Topics {
		if id, ok := im.TopicIDs[rt.Topic]; ok {
			list(im.Topics[id], rt.Partitions)
		}
	}
	return resp
}

// AlterPartitionReassignments: see Core.AlterPartitionReassignments.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.AlterPartitionAssignmentsResponse, error)) {
		core.AlterPartitionReassignments(now, req, answer)
	})
}
