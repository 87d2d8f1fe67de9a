package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

const (
	invalidReplicationFactor = int16(38) // INVALID_REPLICATION_FACTOR
	metadataTopicName        = "__cluster_metadata"
	maxTopicNameLength       = 249
)

// Config sources in DescribeConfigs and CreateTopics answers.
const (
	sourceDynamicTopic         int8 = 1
	sourceDynamicBroker        int8 = 2
	sourceDynamicDefaultBroker int8 = 3
	sourceDefault              int8 = 5
)

// validateTopicName applies Apache's Topic.validate.
func validateTopicName(name string) *Error {
	bad := func(f string, a ...any) *Error { return apiErr(kerr.InvalidTopicException.Code, f, a...) }
	switch {
	case name == "":
		return bad("Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return bad("Topic name cannot be \".\" or \"..\"")
	case len(name) > maxTopicNameLength:
		return bad("Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameLength, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return bad("Topic name \"%s\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// collidingTopic returns an existing topic that differs from name only by
// '.' versus '_' (they collide in metric names), or "".
func collidingTopic(im *metadata.Image, name string) string {
	if !strings.ContainsAny(name, "._") {
		return ""
	}
	unify := func(s string) string { return strings.ReplaceAll(s, ".", "_") }
	for other := range im.TopicIDs {
		if other != name && unify(other) == unify(name) {
			return other
		}
	}
	return ""
}

// CreateTopics handles CreateTopics (Apache's ControllerApis.createTopics
// and ReplicationControlManager.createTopics).
func (c *Core) CreateTopics(now time.Time, req *kmsg.CreateTopicsRequest, answer func(*kmsg.CreateTopicsResponse, error)) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	var results []kmsg.CreateTopicsResponseTopic
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		results = nil
		var recs []metadata.Record
		for _, t := range req.Topics {
			if count[t.Topic] > 1 || t.Topic == metadataTopicName {
				continue
			}
			res := kmsg.NewCreateTopicsResponseTopic()
			res.Topic = t.Topic
			topicRecs, err := c.createTopic(im, &t, &res, recs)
			if err != nil {
				res.ErrorCode, res.ErrorMessage = err.Code, &err.Message
				res.NumPartitions, res.ReplicationFactor, res.Configs = -1, -1, nil
			} else {
				recs = append(recs, topicRecs...)
			}
			results = append(results, res)
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
		resp.Topics = append(results, createTopicsRejections(req, count)...)
		answer(resp, nil)
	})
}

// createTopicsRejections answers the topics of a CreateTopics request
// that are refused before any image is read: duplicated names and the
// metadata topic.
func createTopicsRejections(req *kmsg.CreateTopicsRequest, count map[string]int) []kmsg.CreateTopicsResponseTopic {
	var out []kmsg.CreateTopicsResponseTopic
	done := map[string]bool{}
	for _, t := range req.Topics {
		if done[t.Topic] {
			continue
		}
		done[t.Topic] = true
		var msg string
		switch {
		case count[t.Topic] > 1:
			msg = "Duplicate topic name."
		case t.Topic == metadataTopicName:
			msg = "Creation of internal topic " + metadataTopicName + " is prohibited."
		default:
			continue
		}
		res := kmsg.NewCreateTopicsResponseTopic()
		res.Topic, res.ErrorCode, res.ErrorMessage = t.Topic, kerr.InvalidRequest.Code, &msg
		res.NumPartitions, res.ReplicationFactor = -1, -1
		out = append(out, res)
	}
	return out
}

// createTopic validates one topic of a CreateTopics request and returns its
// records; pending are records of earlier topics of the same request.
func (c *Core) createTopic(im *metadata.Image, t *kmsg.CreateTopicsRequestTopic, res *kmsg.CreateTopicsResponseTopic, pending []metadata.Record) ([]metadata.Record, *Error) {
	if err := validateTopicName(t.Topic); err != nil {
		return nil, err
	}
	pendingName := func(name string) bool {
		return slices.ContainsFunc(pending, func(r metadata.Record) bool {
			tr, ok := r.(*metadata.TopicRecord)
			return ok && tr.Name == name
		})
	}
	if other := collidingTopic(im, t.Topic); other != "" {
		return nil, apiErr(kerr.InvalidTopicException.Code, "Topic '%s' collides with existing topic: %s", t.Topic, other)
	}
	if _, ok := im.TopicIDs[t.Topic]; ok || pendingName(t.Topic) {
		return nil, apiErr(kerr.TopicAlreadyExists.Code, "Topic '%s' already exists.", t.Topic)
	}
	var nulls []string
	configs := map[string]string{}
	for _, cfg := range t.Configs {
		if cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
			continue
		}
		configs[cfg.Name] = *cfg.Value
	}
	if len(nulls) > 0 {
		return nil, apiErr(kerr.InvalidConfig.Code, "Null value not supported for topic configs: %s", strings.Join(nulls, ","))
	}
	for _, name := range sortedKeys(configs) {
		if err := validateTopicConfig(name, configs[name]); err != nil {
			return nil, err
		}
	}

	var assignments [][]int32
	if len(t.ReplicaAssignment) > 0 {
		if t.ReplicationFactor != -1 {
			return nil, apiErr(kerr.InvalidRequest.Code, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if t.NumPartitions != -1 {
			return nil, apiErr(kerr.InvalidRequest.Code, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		byIndex := map[int32][]int32{}
		rf := -1
		for _, a := range t.ReplicaAssignment {
			if _, dup := byIndex[a.Partition]; dup {
				return nil, apiErr(kerr.InvalidReplicaAssignment.Code, "Found multiple manual partition assignments for partition %d", a.Partition)
			}
			if err := validateManualAssignment(im, a.Replicas, rf); err != nil {
				return nil, err
			}
			rf = len(a.Replicas)
			if !slices.ContainsFunc(a.Replicas, func(r int32) bool { return brokerActive(im, r) }) {
				return nil, apiErr(kerr.InvalidReplicaAssignment.Code, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", a.Partition)
			}
			byIndex[a.Partition] = a.Replicas
		}
		for i := range int32(len(byIndex)) {
			r, ok := byIndex[i]
			if !ok {
				return nil, apiErr(kerr.InvalidReplicaAssignment.Code, "partitions should be a consecutive 0-based integer sequence")
			}
			assignments = append(assignments, r)
		}
	} else {
		if t.ReplicationFactor < -1 || t.ReplicationFactor == 0 {
			return nil, apiErr(invalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		}
		if t.NumPartitions < -1 || t.NumPartitions == 0 {
			return nil, apiErr(kerr.InvalidPartitions.Code, "Number of partitions was set to an invalid non-positive value.")
		}
		n, rf := t.NumPartitions, t.ReplicationFactor
		if n == -1 {
			n = c.settings.DefaultPartitions
		}
		if rf == -1 {
			rf = c.settings.DefaultReplicationFactor
		}
		var err *Error
		assignments, err = c.candidates(im).place(c.settings.Rand, int(n), rf)
		if err != nil {
			return nil, apiErr(invalidReplicationFactor, "Unable to replicate the partition %d time(s): %s", rf, err.Message)
		}
		for _, a := range assignments {
			if !slices.ContainsFunc(a, func(r int32) bool { return brokerActive(im, r) }) {
				return nil, apiErr(invalidReplicationFactor, "Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", rf)
			}
		}
	}

	id := newTopicID(c.settings.TopicIDs)
	res.TopicID = id
	res.NumPartitions = int32(len(assignments))
	res.ReplicationFactor = int16(len(assignments[0]))
	res.Configs = effectiveTopicConfigs(im, configs)
	recs := []metadata.Record{&metadata.TopicRecord{Name: t.Topic, TopicId: metadata.Uuid(id)}}
	for _, name := range sortedKeys(configs) {
		v := configs[name]
		recs = append(recs, &metadata.ConfigRecord{ResourceType: resourceTopic, ResourceName: t.Topic, Name: name, Value: &v})
	}
	for i, replicas := range assignments {
		recs = append(recs, newPartitionRecord(im, metadata.Uuid(id), int32(i), replicas))
	}
	return recs, nil
}

// newPartitionRecord builds a new partition led by its first active replica,
// with the active replicas as ISR.
func newPartitionRecord(im *metadata.Image, topic metadata.Uuid, id int32, replicas []int32) *metadata.PartitionRecord {
	isr := []int32{}
	for _, r := range replicas {
		if brokerActive(im, r) {
			isr = append(isr, r)
		}
	}
	rec := &metadata.PartitionRecord{PartitionId: id, TopicId: topic, Replicas: slices.Clone(replicas), Isr: isr,
		RemovingReplicas: []int32{}, AddingReplicas: []int32{}, Leader: isr[0], LeaderEpoch: 0, PartitionEpoch: 0}
	mv := metadataVersion(im)
	rec.SetVersion(partitionRecordVersion(mv))
	if mv >= MVDirectoryAssignment {
		rec.Directories = defaultDirs(im, replicas)
	}
	if rec.Version >= 2 {
		rec.EligibleLeaderReplicas, rec.LastKnownElr = []int32{}, []int32{}
	}
	return rec
}

// defaultDir is the log directory a new replica on broker gets: its only
// directory, or "unassigned" when it has several (it then tells the
// controller), or "migrating" when it registered none.
func defaultDir(im *metadata.Image, broker int32) metadata.Uuid {
	b, ok := im.Brokers[broker]
	switch {
	case !ok:
		return dirUnassigned
	case len(b.LogDirs) == 0:
		return dirMigrating
	case len(b.LogDirs) == 1:
		return b.LogDirs[0]
	}
	return dirUnassigned
}

// defaultDirs is defaultDir for each of replicas.
func defaultDirs(im *metadata.Image, replicas []int32) []metadata.Uuid {
	dirs := make([]metadata.Uuid, len(replicas))
	for i, r := range replicas {
		dirs[i] = defaultDir(im, r)
	}
	return dirs
}

func validateManualAssignment(im *metadata.Image, replicas []int32, rf int) *Error {
	if len(replicas) == 0 {
		return apiErr(kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list.")
	}
	seen := map[int32]bool{}
	for _, r := range replicas {
		if seen[r] {
			return apiErr(kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes the broker %d more than once.", r)
		}
		seen[r] = true
		b, ok := im.Brokers[r]
		if !ok {
			return apiErr(kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
		if !hasUncordonedDirs(b) {
			return apiErr(kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes broker %d, but all its log directories are cordoned.", r)
		}
	}
	if rf >= 0 && rf != len(replicas) {
		return apiErr(kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	return nil
}

// candidates are the brokers new replicas may go to, striped for placement.
// They are kept until the broker set changes: listing, sorting and striping
// a thousand brokers cost more than the rest of a CreateTopics.
func (c *Core) candidates(im *metadata.Image) *candidates {
	if c.placement.im != im || c.placement.gen != im.BrokersGeneration() {
		c.placement.im, c.placement.gen, c.placement.set = im, im.BrokersGeneration(), newCandidates(usableBrokers(im))
	}
	return c.placement.set
}

// usableBrokers are every registered broker not in a controlled shutdown
// and with a directory that is not cordoned, by id.
func usableBrokers(im *metadata.Image) []usableBroker {
	var out []usableBroker
	for id, b := range im.Brokers {
		if b.InControlledShutdown || !hasUncordonedDirs(b) {
			continue
		}
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		out = append(out, usableBroker{id: id, rack: rack, fenced: b.Fenced})
	}
	slices.SortFunc(out, func(a, b usableBroker) int { return int(a.id - b.id) })
	return out
}

// DeleteTopics handles DeleteTopics (Apache's ControllerApis.deleteTopics).
// Topics may be named (v0-5, and v6 with a name) or given by id (v6).
func (c *Core) DeleteTopics(now time.Time, req *kmsg.DeleteTopicsRequest, answer func(*kmsg.DeleteTopicsResponse, error)) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	add := func(name *string, id [16]byte, code int16, msg string) {
		r := kmsg.NewDeleteTopicsResponseTopic()
		r.Topic, r.TopicID, r.ErrorCode = name, id, code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, r)
	}
	names, ids := map[string]int{}, map[[16]byte]int{}
	var nameOrder []string
	var idOrder [][16]byte
	addName := func(n string) {
		if names[n] == 0 {
			nameOrder = append(nameOrder, n)
		}
		names[n]++
	}
	for _, n := range req.TopicNames {
		addName(n)
	}
	for _, t := range req.Topics {
		switch {
		case t.Topic == nil && t.TopicID == [16]byte{}:
			add(nil, t.TopicID, kerr.InvalidRequest.Code, "Neither topic name nor id were specified.")
		case t.Topic == nil:
			if ids[t.TopicID] == 0 {
				idOrder = append(idOrder, t.TopicID)
			}
			ids[t.TopicID]++
		case t.TopicID != [16]byte{}:
			add(t.Topic, t.TopicID, kerr.InvalidRequest.Code, "You may not specify both topic name and topic id.")
		default:
			addName(*t.Topic)
		}
	}
	for _, n := range nameOrder {
		if names[n] > 1 {
			add(&n, [16]byte{}, kerr.InvalidRequest.Code, "Duplicate topic name.")
		}
	}
	for _, id := range idOrder {
		if ids[id] > 1 {
			add(nil, id, kerr.InvalidRequest.Code, "Duplicate topic id.")
		}
	}
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		var recs []metadata.Record
		deleting := map[metadata.Uuid]bool{}
		for _, id := range idOrder {
			if ids[id] > 1 {
				continue
			}
			t, ok := im.Topics[metadata.Uuid(id)]
			if !ok {
				add(nil, id, kerr.UnknownTopicID.Code, "")
				continue
			}
			deleting[t.ID] = true
			name := t.Name
			add(&name, id, 0, "")
			recs = append(recs, &metadata.RemoveTopicRecord{TopicId: t.ID})
		}
		for _, n := range nameOrder {
			if names[n] > 1 {
				continue
			}
			id, ok := im.TopicIDs[n]
			if !ok {
				add(&n, [16]byte{}, kerr.UnknownTopicOrPartition.Code, "")
				continue
			}
			if deleting[id] {
				add(&n, id, kerr.InvalidRequest.Code, "The provided topic name maps to an ID that was already supplied.")
				continue
			}
			deleting[id] = true
			add(&n, id, 0, "")
			recs = append(recs, &metadata.RemoveTopicRecord{TopicId: id})
		}
		return recs, nil
	}, func(_ written, err error) {
		if err != nil {
			answer(nil, err)
			return
		}
		if req.Version < 5 {
			for i := range resp.Topics {
				resp.Topics[i].ErrorMessage = nil
			}
		}
		answer(resp, nil)
	})
}

// CreatePartitions handles CreatePartitions (Apache's
// ReplicationControlManager.createPartitions).
func (c *Core) CreatePartitions(now time.Time, req *kmsg.CreatePartitionsRequest, answer func(*kmsg.CreatePartitionsResponse, error)) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	add := func(name string, err *Error) {
		r := kmsg.NewCreatePartitionsResponseTopic()
		r.Topic = name
		if err != nil {
			r.ErrorCode = err.Code
			if err.Message != "" {
				r.ErrorMessage = &err.Message
			}
		}
		resp.Topics = append(resp.Topics, r)
	}
	reported := map[string]bool{}
	for _, t := range req.Topics {
		if count[t.Topic] > 1 && !reported[t.Topic] {
			reported[t.Topic] = true
			add(t.Topic, apiErr(kerr.InvalidRequest.Code, "Duplicate topic name."))
		}
	}
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		var recs []metadata.Record
		for _, t := range req.Topics {
			if count[t.Topic] > 1 {
				continue
			}
			more, err := c.createPartitions(im, &t)
			add(t.Topic, err)
			recs = append(recs, more...)
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
		answer(resp, nil)
	})
}

func (c *Core) createPartitions(im *metadata.Image, t *kmsg.CreatePartitionsRequestTopic) ([]metadata.Record, *Error) {
	id, ok := im.TopicIDs[t.Topic]
	if !ok {
		return nil, &Error{Code: kerr.UnknownTopicOrPartition.Code}
	}
	topic := im.Topics[id]
	have := int32(len(topic.Partitions))
	switch {
	case t.Count == have:
		return nil, apiErr(kerr.InvalidPartitions.Code, "Topic already has %d partition(s).", have)
	case t.Count < have:
		return nil, apiErr(kerr.InvalidPartitions.Code, "The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, have, t.Count)
	}
	additional := int(t.Count - have)
	if t.Assignment != nil && len(t.Assignment) != additional {
		return nil, apiErr(kerr.InvalidReplicaAssignment.Code, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(t.Assignment))
	}
	rf := int16(len(topic.Partitions[0].Replicas))
	var assignments [][]int32
	if t.Assignment != nil {
		for i, a := range t.Assignment {
			if err := validateManualAssignment(im, a.Replicas, int(rf)); err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(a.Replicas, func(r int32) bool { return brokerActive(im, r) }) {
				return nil, apiErr(kerr.InvalidReplicaAssignment.Code, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", int(have)+i)
			}
			assignments = append(assignments, a.Replicas)
		}
	} else {
		var err *Error
		if assignments, err = c.candidates(im).place(c.settings.Rand, additional, rf); err != nil {
			return nil, err
		}
		for _, a := range assignments {
			if !slices.ContainsFunc(a, func(r int32) bool { return brokerActive(im, r) }) {
				return nil, apiErr(invalidReplicationFactor, "Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", rf)
			}
		}
	}
	var recs []metadata.Record
	for i, a := range assignments {
		recs = append(recs, newPartitionRecord(im, id, have+int32(i), a))
	}
	return recs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var _ = fmt.Sprint
