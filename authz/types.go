package authz

import (
	"fmt"
	"strings"
)

// ResourceType is Apache's ResourceType code, as ACL records carry it.
type ResourceType int8

// Resource types.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// PatternType is Apache's PatternType code: how an ACL's name matches.
type PatternType int8

// Pattern types.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters only
	PatternMatch    PatternType = 2 // filters only
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is Apache's AclOperation code.
type Operation int8

// Operations.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

// Permission is Apache's AclPermissionType code.
type Permission int8

// Permissions.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

// Wildcard is the LITERAL resource name and the host that match any.
const Wildcard = "*"

// WildcardPrincipal is the ACL principal that matches every principal.
const WildcardPrincipal = "User:*"

// ClusterName is the name of the one CLUSTER resource.
const ClusterName = "kafka-cluster"

var resourceNames = [...]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}

var patternNames = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}

var operationNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
	"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS",
	"TWO_PHASE_COMMIT"}

var permissionNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}

func name[T ~int8](names []string, v T) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("UNKNOWN(%d)", v)
}

func (t ResourceType) String() string { return name(resourceNames[:], t) }
func (p PatternType) String() string  { return name(patternNames[:], p) }
func (o Operation) String() string    { return name(operationNames[:], o) }
func (p Permission) String() string   { return name(permissionNames[:], p) }

// ParseOperation reads an operation's name, in any case ("Read", "READ").
func ParseOperation(s string) (Operation, bool) {
	for i, n := range operationNames {
		if strings.EqualFold(n, s) {
			return Operation(i), true
		}
	}
	return OpUnknown, false
}

// ACL is one access control entry.
type ACL struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string // "User:alice", or WildcardPrincipal
	Host         string // an address, Wildcard, or a CIDR range
	Operation    Operation
	Permission   Permission
}

func (a ACL) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, op=%s, permissionType=%s) on %s:%s:%s",
		a.Principal, a.Host, a.Operation, a.Permission, a.ResourceType, a.PatternType, a.ResourceName)
}

// Action is one thing a request wants to do.
type Action struct {
	Principal    string // "Type:Name"
	Host         string // the client's address as Java prints it (HostOf)
	Operation    Operation
	ResourceType ResourceType
	ResourceName string
}

func (a Action) String() string {
	return fmt.Sprintf("principal %s from host %s: %s on %s:%s", a.Principal, a.Host, a.Operation, a.ResourceType, a.ResourceName)
}

// Rule says which rule decided.
type Rule int8

// Rules, as Apache's audit log names them.
const (
	RuleDefaultDeny Rule = iota // ACLs name the resource, none allows
	RuleNoACLs                  // no ACL names the resource: allow.everyone.if.no.acl.found decides
	RuleSuperUser               // the principal is in super.users
	RuleMatchingACL             // an ACL allowed or denied
	RuleNotReady                // the ACLs are not loaded yet: denied
)

// Decision is the result of Authorize.
type Decision struct {
	Allowed bool
	Rule    Rule
	ACL     ACL // the deciding ACL when Rule is RuleMatchingACL
}

func (d Decision) String() string {
	switch d.Rule {
	case RuleSuperUser:
		return "SuperUser"
	case RuleNotReady:
		return "AuthorizerNotReady"
	case RuleMatchingACL:
		return "MatchingAcl(" + d.ACL.String() + ")"
	case RuleNoACLs:
		if d.Allowed {
			return "DefaultAllow"
		}
	}
	return "DefaultDeny"
}
