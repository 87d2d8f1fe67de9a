package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/kafkaconfig"
)

// describeOwnConfig answers DescribeConfigs of a BROKER resource: this
// node's own configuration ("" is the cluster default), as an Apache node
// answers it from its KafkaConfig. kraftd has no KafkaConfig, so it follows
// the one of the release line the oldest registered node runs, from the
// file it was started with and the dynamic configs in the image.
func (s *Server) describeOwnConfig(req *kmsg.DescribeConfigsRequest, res kmsg.DescribeConfigsRequestResource, ctl *controller.Controller) kmsg.DescribeConfigsResponseResource {
	out := kmsg.NewDescribeConfigsResponseResource()
	out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
	perNode, clusterDefault, line := ctl.BrokerConfigs(s.cfg.NodeID)
	node := kafkaconfig.Node{ID: s.cfg.NodeID, Static: s.cfg.Static, PerNode: perNode, ClusterDefault: clusterDefault}
	entries, refusal := kafkaconfig.For(line).Describe(node, res.ResourceName)
	if refusal != nil {
		out.ErrorCode, out.ErrorMessage = refusal.Code, kmsg.StringPtr(refusal.Message)
		return out
	}
	out.ErrorMessage = kmsg.StringPtr("") // what Apache sends on success
	for _, e := range entries {
		if len(res.ConfigNames) > 0 && !slices.Contains(res.ConfigNames, e.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.Name, e.Value, e.ReadOnly, e.Sensitive
		c.Source, c.ConfigType = kmsg.ConfigSource(e.Source), kmsg.ConfigType(e.Type)
		c.IsDefault = e.Source == kafkaconfig.SourceDefault // v0's field
		if req.IncludeSynonyms {
			for _, syn := range e.Synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = syn.Name, syn.Value, kmsg.ConfigSource(syn.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
		}
		out.Configs = append(out.Configs, c)
	}
	return out
}
