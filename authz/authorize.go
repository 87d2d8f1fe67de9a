package authz

import (
	"net/netip"
	"strings"
)

// Authorizer decides with an Index, super.users and
// allow.everyone.if.no.acl.found.
type Authorizer struct {
	acls         *Index
	superUsers   map[string]bool
	allowIfNoACL bool
	// loaded, when set, is closed once acls holds every committed ACL;
	// until then only super users are allowed (RuleNotReady).
	loaded <-chan struct{}
}

// New returns an authorizer over acls. superUsers are principals
// ("User:admin") allowed everything.
func New(acls *Index, superUsers []string, allowIfNoACL bool) *Authorizer {
	su := make(map[string]bool, len(superUsers))
	for _, p := range superUsers {
		su[p] = true
	}
	return &Authorizer{acls: acls, superUsers: su, allowIfNoACL: allowIfNoACL}
}

// WaitForLoad makes every decision but a super user's RuleNotReady until
// loaded is closed: before the metadata log is replayed to its high
// watermark the index may lack a DENY, and allow.everyone.if.no.acl.found
// would then allow what the ACLs forbid (Apache's StandardAuthorizer
// likewise refuses everyone but super users before its initial load).
// Call it before the authorizer is shared.
func (a *Authorizer) WaitForLoad(loaded <-chan struct{}) { a.loaded = loaded }

// ParseSuperUsers reads super.users: principals separated by semicolons,
// blanks around each ignored, as Apache splits it.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Index is the ACL index the authorizer reads.
func (a *Authorizer) Index() *Index { return a.acls }

// Authorize decides one action: a super user is allowed; else any
// matching DENY denies; else any matching ALLOW allows; else, when some ACL
// names the resource, it is denied, and when none does,
// allow.everyone.if.no.acl.found decides.
func (a *Authorizer) Authorize(act Action) Decision {
	if a.superUsers[act.Principal] {
		return Decision{Allowed: true, Rule: RuleSuperUser}
	}
	if a.loaded != nil {
		select {
		case <-a.loaded:
		default:
			return Decision{Rule: RuleNotReady}
		}
	}
	x := a.acls
	x.mu.RLock()
	defer x.mu.RUnlock()
	m := matcher{act: act, x: x}
	if m.section(x.literal[resourceKey{act.ResourceType, act.ResourceName}]) {
		return m.decision(a.allowIfNoACL)
	}
	for _, l := range x.lengths[act.ResourceType] {
		if l > len(act.ResourceName) {
			break
		}
		if m.section(x.prefixed[resourceKey{act.ResourceType, act.ResourceName[:l]}]) {
			return m.decision(a.allowIfNoACL)
		}
	}
	if act.ResourceName != Wildcard {
		m.section(x.literal[resourceKey{act.ResourceType, Wildcard}])
	}
	return m.decision(a.allowIfNoACL)
}

// matcher collects what the ACLs of the resource say about one action.
type matcher struct {
	act    Action
	x      *Index     // read-locked by Authorize
	host   netip.Addr // the action's host, parsed at the first CIDR ACL
	parsed bool
	found  bool // some ACL names the resource
	allow  *entry
	deny   *entry
}

// section checks the ACLs of one resource pattern; it reports true at a
// DENY, which decides at once.
func (m *matcher) section(es []entry) bool {
	for i := range es {
		e := &es[i]
		m.found = true
		if !m.matches(e) {
			continue
		}
		if e.permission == PermissionDeny {
			m.deny = e
			return true
		}
		if e.permission == PermissionAllow && m.allow == nil {
			m.allow = e
		}
	}
	return false
}

// implies lists, for an operation asked for, the operations whose ALLOW
// grants it besides itself and ALL.
var implies = map[Operation][]Operation{
	OpDescribe:        {OpRead, OpWrite, OpDelete, OpAlter},
	OpDescribeConfigs: {OpAlterConfigs},
}

func (m *matcher) matches(e *entry) bool {
	if e.principal != m.act.Principal && e.principal != WildcardPrincipal {
		return false
	}
	if e.host != Wildcard && e.host != m.act.Host && !m.inRange(e) {
		return false
	}
	if e.op == OpAll || e.op == m.act.Operation {
		return true
	}
	// Implication holds for ALLOW only: DENY of READ does not deny DESCRIBE.
	return e.permission == PermissionAllow && containsOp(implies[m.act.Operation], e.op)
}

func containsOp(ops []Operation, op Operation) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

func (m *matcher) inRange(e *entry) bool {
	if !m.x.cidrHosts || !e.cidr.IsValid() {
		return false
	}
	if !m.parsed {
		m.parsed = true
		m.host, _ = netip.ParseAddr(m.act.Host)
	}
	return m.host.IsValid() && e.cidr.Contains(m.host.Unmap())
}

func (m *matcher) decision(allowIfNoACL bool) Decision {
	switch {
	case m.deny != nil:
		return Decision{Allowed: false, Rule: RuleMatchingACL, ACL: m.entryACL(m.deny)}
	case m.allow != nil:
		return Decision{Allowed: true, Rule: RuleMatchingACL, ACL: m.entryACL(m.allow)}
	case !m.found:
		return Decision{Allowed: allowIfNoACL, Rule: RuleNoACLs}
	}
	return Decision{Allowed: false, Rule: RuleDefaultDeny}
}

// entryACL is the whole ACL behind an entry.
func (m *matcher) entryACL(e *entry) ACL { return m.x.byID[e.id] }
