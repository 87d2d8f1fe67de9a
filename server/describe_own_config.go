package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

// describeOwnConfig answers DescribeConfigs of a BROKER resource: this
// node's own configuration ("" is the cluster default), as an Apache node
// answers it from its KafkaConfig (controller.DescribeOwnConfig). Asked
// for documentation, each key says whether kraftd itself reads it: Apache's
// texts are not kraftd's to send, and whether a key has any effect here is
// what an operator moving a file from Apache needs to know.
func (s *Server) describeOwnConfig(req *kmsg.DescribeConfigsRequest, res kmsg.DescribeConfigsRequestResource, ctl *controller.Controller) kmsg.DescribeConfigsResponseResource {
	out := ctl.DescribeOwnConfig(req, res)
	if req.IncludeDocumentation {
		for i := range out.Configs {
			c := &out.Configs[i]
			if s.cfg.Read[c.Name] {
				c.Documentation = kmsg.StringPtr("kraftd reads this key.")
			} else {
				c.Documentation = kmsg.StringPtr("kraftd does not use this key; it is listed as Apache Kafka's KafkaConfig of the cluster's oldest release line defines it.")
			}
		}
	}
	return out
}
