package controller

import (
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/kafkaconfig"
	"github.com/kraftd/kraftd/metadata"
)

// A node's own configuration is its server.properties and the dynamic
// BROKER configs of its id and of the cluster default, read under the
// KafkaConfig of the cluster's oldest release line (kafkaconfig). The
// controller describes it (DescribeConfigs of BROKER resources), and group
// configs follow its group.* keys: their defaults, bounds and synonyms.

// UseStaticConfig gives the controller its node's server.properties as
// read. It must be called before the controller serves.
func (c *Controller) UseStaticConfig(props map[string]string) { c.static = maps.Clone(props) }

// nodeDefs are the KafkaConfig facts the node's configuration is read
// under: the cluster's oldest release line's.
func nodeDefs(im *metadata.Image) *kafkaconfig.Defs {
	return kafkaconfig.For(exactReleaseLine(oldestSupported(im)))
}

// nodeConfig is the node's configuration over im.
func (c *Controller) nodeConfig(im *metadata.Image) *kafkaconfig.View {
	return nodeDefs(im).View(c.ownConfigNode(im))
}

func (c *Controller) ownConfigNode(im *metadata.Image) kafkaconfig.Node {
	return kafkaconfig.Node{ID: c.nodeID, Static: c.static,
		PerNode:        im.Configs[metadata.ConfigResource{ResourceType: resourceBroker, Name: strconv.Itoa(int(c.nodeID))}],
		ClusterDefault: im.Configs[metadata.ConfigResource{ResourceType: resourceBroker}]}
}

// DescribeOwnConfig answers DescribeConfigs of BROKER resource res on this
// node from the committed image: its own configuration, or ("") the
// cluster defaults, as an Apache node of the cluster's oldest line answers
// (without documentation).
func (c *Controller) DescribeOwnConfig(req *kmsg.DescribeConfigsRequest, res kmsg.DescribeConfigsRequestResource) kmsg.DescribeConfigsResponseResource {
	c.mu.RLock()
	entries, refusal := nodeDefs(c.image).Describe(c.ownConfigNode(c.image), res.ResourceName)
	c.mu.RUnlock()
	out := kmsg.NewDescribeConfigsResponseResource()
	out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
	if refusal != nil {
		out.ErrorCode, out.ErrorMessage = refusal.Code, kmsg.StringPtr(refusal.Message)
		return out
	}
	out.ErrorMessage = kmsg.StringPtr("") // what Apache sends on success
	for _, e := range entries {
		if len(res.ConfigNames) > 0 && !slices.Contains(res.ConfigNames, e.Name) {
			continue
		}
		cfg := describedConfig(req, e.Name, e.Value, kmsg.ConfigType(e.Type), e.Synonyms)
		cfg.ReadOnly, cfg.IsSensitive = e.ReadOnly, e.Sensitive
		out.Configs = append(out.Configs, cfg)
	}
	return out
}

// groupRules are what group config checks and descriptions follow: the
// release line of their rules and the node's configuration (nil: Apache's
// defaults for every group.* key).
type groupRules struct {
	line int
	node *kafkaconfig.View
}

func (c *Controller) groupRules(im *metadata.Image) groupRules {
	return groupRules{line: clusterReleaseLine(im), node: c.nodeConfig(im)}
}

// brokerValue is the node's value of broker key name, nil if it has none.
func (r groupRules) brokerValue(name string) *string {
	if r.node == nil {
		return nil
	}
	return r.node.Value(name)
}

// brokerInt is the node's value of integer broker key name, def when it
// has none.
func (r groupRules) brokerInt(name string, def int64) int64 {
	if v := r.brokerValue(name); v != nil {
		if n, err := strconv.ParseInt(*v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

// synonyms is the synonym chain of broker key name on the node.
func (r groupRules) synonyms(name string) []kafkaconfig.Synonym {
	if r.node == nil {
		return nil
	}
	return r.node.Synonyms(name)
}
