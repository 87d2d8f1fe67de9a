package server

// AlterPartitionReassignments: v0-1
//
// Version notes:
//   - v0: flexible from the start.
//   - v1: AllowReplicationFactorChange (KIP-860); v0 requests may change
//     the replication factor.
//
// Brokers forward it inside an Envelope (kafka-reassign-partitions
// --execute and --cancel); it may also come straight from an admin client
// given --bootstrap-controller.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(45, 0, 1, (*Server).handleAlterPartitionReassignments,
		accessRule{name: "AlterPartitionAssignments", cluster: authz.OpAlter})
}

func (s *Server) handleAlterPartitionReassignments(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	err := errNoController
	var resp *kmsg.AlterPartitionAssignmentsResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, req.TimeoutMillis)
		defer cancel()
		resp, err = ctl.AlterPartitionReassignments(ctx, req)
	}
	if err != nil {
		// Apache's error response: the code at the top and on every
		// partition.
		resp = req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.AllowReplicationFactorChange = req.Version < 1 || req.AllowReplicationFactorChange
		code, msg := controller.ErrorCode(err)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		for _, t := range req.Topics {
			out := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			out.Topic = t.Topic
			for _, p := range t.Partitions {
				res := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				res.Partition, res.ErrorCode, res.ErrorMessage = p.Partition, code, msg
				out.Partitions = append(out.Partitions, res)
			}
			resp.Topics = append(resp.Topics, out)
		}
	}
	return resp, nil
}
