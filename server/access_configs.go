// access_configs.go is the access rule of config resources, which
// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: what
// each resource type needs, and the code its refusal carries.

package server

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kraftd/kraftd/authz"
)

// Config resource types (ConfigResource.Type).
const (
	configTopic         int8 = 2
	configBroker        int8 = 4
	configBrokerLogger  int8 = 8
	configClientMetrics int8 = 16
	configGroup         int8 = 32
)

// configAccess is what altering (op ALTER_CONFIGS) or describing (op
// DESCRIBE_CONFIGS) a config resource needs, and the code of its refusal;
// ok is false for a type Apache does not check (the controller refuses
// it).
func configAccess(resType int8, name string, op authz.Operation) (t authz.ResourceType, resource string, code int16, ok bool) {
	switch resType {
	case configBroker, configClientMetrics:
		return authz.ResourceCluster, authz.ClusterName, kerr.ClusterAuthorizationFailed.Code, true
	case configBrokerLogger:
		if op == authz.OpDescribeConfigs {
			return authz.ResourceCluster, authz.ClusterName, kerr.ClusterAuthorizationFailed.Code, true
		}
	case configTopic:
		return authz.ResourceTopic, name, kerr.TopicAuthorizationFailed.Code, true
	case configGroup:
		return authz.ResourceGroup, name, kerr.GroupAuthorizationFailed.Code, true
	}
	return 0, "", 0, false
}

// configRefusal checks one config resource and returns the refusal's code,
// or 0 when it may go ahead. BROKER_LOGGER changes need CLUSTER_ACTION on
// IncrementalAlterConfigs.
func (s *Server) configRefusal(r *Request, resType int8, name string, op authz.Operation, incremental bool) int16 {
	if incremental && resType == configBrokerLogger {
		if s.allowed(r, authz.OpClusterAction, authz.ResourceCluster, authz.ClusterName) {
			return 0
		}
		return kerr.ClusterAuthorizationFailed.Code
	}
	t, resource, code, ok := configAccess(resType, name, op)
	if !ok || s.allowed(r, op, t, resource) {
		return 0
	}
	return code
}

// configKey names a config resource, to find the duplicates the
// controller refuses itself (counts).
type configKey struct {
	t    int8
	name string
}
