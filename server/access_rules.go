package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

// accessRule is what Apache's ControllerApis checks before it serves one
// API key, when an authorizer is configured.
type accessRule struct {
	name string // the API's name, for logs and docs
	// cluster is the operation needed on CLUSTER:kafka-cluster, checked
	// before the handler runs (Apache's authorizeClusterOperation); a
	// request without it is answered with CLUSTER_AUTHORIZATION_FAILED.
	cluster authz.Operation
	// items says what the handler checks itself, item by item, answering
	// each refused item with its own error code (CreateTopics: CREATE on
	// the cluster or on each topic, ...). It is documentation: the check
	// lives in the handler, through Server.allowed.
	items string
	// open marks the keys every client may send (ApiVersions, SASL).
	open bool
	// refuse builds the answer to a request refused whole when its
	// response carries the error per item rather than at the top; nil sets
	// the response's top-level ErrorCode (and ErrorMessage, if it has one).
	refuse func(req kmsg.Request, code int16, msg *string) kmsg.Response
}

// accessRules is Apache's ControllerApis (4.1 and 4.4 agree) as a table:
// one row per API key a controller serves, or that other kraftd work
// adds. A served key without a row is refused to everyone but super users
// when the authorizer is on (and a test fails), so a new handler cannot be
// served unchecked by accident.
var accessRules = map[int16]accessRule{
	1:  {name: "Fetch", cluster: authz.OpClusterAction},
	17: {name: "SaslHandshake", open: true},
	18: {name: "ApiVersions", open: true},
	19: {name: "CreateTopics", items: "CREATE on CLUSTER, else CREATE on each TOPIC; DESCRIBE_CONFIGS on each TOPIC for its configs"},
	20: {name: "DeleteTopics", items: "DELETE on CLUSTER, else DESCRIBE and DELETE on each TOPIC"},
	29: {name: "DescribeAcls", cluster: authz.OpDescribe},
	30: {name: "CreateAcls", cluster: authz.OpAlter, refuse: refuseCreateAcls},
	31: {name: "DeleteAcls", cluster: authz.OpAlter, refuse: refuseDeleteAcls},
	32: {name: "DescribeConfigs", items: "DESCRIBE_CONFIGS on CLUSTER for BROKER, BROKER_LOGGER and CLIENT_METRICS, on the TOPIC or GROUP for those"},
	33: {name: "AlterConfigs", items: "ALTER_CONFIGS on CLUSTER for BROKER and CLIENT_METRICS, on the TOPIC or GROUP for those"},
	36: {name: "SaslAuthenticate", open: true},
	37: {name: "CreatePartitions", items: "ALTER on each TOPIC"},
	38: {name: "CreateDelegationToken", items: "CREATE_TOKENS on the owner's USER when the owner is not the requester"},
	39: {name: "RenewDelegationToken", items: "no ACL: only the token's owner or a renewer (the controller's rule)"},
	40: {name: "ExpireDelegationToken", items: "no ACL: only the token's owner or a renewer (the controller's rule)"},
	41: {name: "DescribeDelegationToken", open: true}, // listed, but answered UNKNOWN_SERVER_ERROR, as Apache's controller does
	43: {name: "ElectLeaders", cluster: authz.OpAlter, refuse: refuseElectLeaders},
	44: {name: "IncrementalAlterConfigs", items: "ALTER_CONFIGS on CLUSTER for BROKER and CLIENT_METRICS, on the TOPIC or GROUP for those; CLUSTER_ACTION on CLUSTER for BROKER_LOGGER"},
	45: {name: "AlterPartitionAssignments", cluster: authz.OpAlter},
	46: {name: "ListPartitionReassignments", cluster: authz.OpDescribe},
	49: {name: "AlterClientQuotas", cluster: authz.OpAlterConfigs, refuse: refuseAlterClientQuotas},
	50: {name: "DescribeUserScramCredentials", cluster: authz.OpDescribe}, // brokers answer it in Apache; kraftd's controller too
	51: {name: "AlterUserScramCredentials", cluster: authz.OpAlter, refuse: refuseAlterUserScram},
	52: {name: "Vote", cluster: authz.OpClusterAction},
	53: {name: "BeginQuorumEpoch", cluster: authz.OpClusterAction},
	54: {name: "EndQuorumEpoch", cluster: authz.OpClusterAction},
	55: {name: "DescribeQuorum", cluster: authz.OpDescribe},
	56: {name: "AlterPartition", cluster: authz.OpClusterAction},
	57: {name: "UpdateFeatures", cluster: authz.OpAlter},
	58: {name: "Envelope", cluster: authz.OpClusterAction}, // the inner request is checked for its own principal
	59: {name: "FetchSnapshot", cluster: authz.OpClusterAction},
	60: {name: "DescribeCluster", cluster: authz.OpAlter}, // ALTER on a controller, unlike a broker
	62: {name: "BrokerRegistration", cluster: authz.OpClusterAction},
	63: {name: "BrokerHeartbeat", cluster: authz.OpClusterAction},
	64: {name: "UnregisterBroker", cluster: authz.OpAlter},
	67: {name: "AllocateProducerIds", cluster: authz.OpClusterAction},
	70: {name: "ControllerRegistration", cluster: authz.OpClusterAction},
	73: {name: "AssignReplicasToDirs", cluster: authz.OpClusterAction},
	80: {name: "AddRaftVoter", cluster: authz.OpAlter},
	81: {name: "RemoveRaftVoter", cluster: authz.OpAlter},
	82: {name: "UpdateRaftVoter", cluster: authz.OpClusterAction},
	94: {name: "UnregisterController", cluster: authz.OpAlter},
}

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

func refuseCreateAcls(r kmsg.Request, code int16, msg *string) kmsg.Response {
	req := r.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func refuseDeleteAcls(r kmsg.Request, code int16, msg *string) kmsg.Response {
	req := r.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func refuseAlterClientQuotas(r kmsg.Request, code int16, msg *string) kmsg.Response {
	req := r.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		res := kmsg.NewAlterClientQuotasResponseEntry()
		res.ErrorCode, res.ErrorMessage = code, msg
		for _, en := range e.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = en.Type, en.Name
			res.Entity = append(res.Entity, re)
		}
		resp.Entries = append(resp.Entries, res)
	}
	return resp
}

func refuseAlterUserScram(r kmsg.Request, code int16, msg *string) kmsg.Response {
	req := r.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = user, code, msg
		resp.Results = append(resp.Results, res)
	}
	for _, d := range req.Deletions {
		add(d.Name)
	}
	for _, u := range req.Upsertions {
		add(u.Name)
	}
	return resp
}
