package server

// ElectLeaders: v0-2
//
// Version notes:
//   - v1: ElectionType (0 preferred, 1 unclean) and a top-level ErrorCode.
//   - v2: flexible.
//
// With no topics named, every partition is considered and only those that
// needed an election are reported. Brokers forward it inside an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(43, 0, 2, (*Server).handleElectLeaders,
		accessRule{name: "ElectLeaders", cluster: authz.OpAlter, refuse: refuseElectLeaders})
}

func (s *Server) handleElectLeaders(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	err := errNoController
	var resp *kmsg.ElectLeadersResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, req.TimeoutMillis)
		defer cancel()
		resp, err = ctl.ElectLeaders(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.ElectLeadersResponse)
		code, msg := controller.ErrorCode(err)
		resp.ErrorCode = code
		for _, t := range req.Topics {
			out := kmsg.NewElectLeadersResponseTopic()
			out.Topic = t.Topic
			for _, p := range t.Partitions {
				res := kmsg.NewElectLeadersResponseTopicPartition()
				res.Partition, res.ErrorCode, res.ErrorMessage = p, code, msg
				out.Partitions = append(out.Partitions, res)
			}
			resp.Topics = append(resp.Topics, out)
		}
	}
	return resp, nil
}

// refuseElectLeaders answers a request refused whole: the code at the top
// and on each partition named.
func refuseElectLeaders(r kmsg.Request, code int16, _ *string) kmsg.Response {
	req := r.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = code
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
