package authz

// Filter selects ACLs, as DescribeAcls and DeleteAcls carry it (Apache's
// AclBindingFilter): ANY matches every resource type, operation and
// permission; a nil name, principal or host matches any; the pattern type
// ANY matches patterns of the exact name, and MATCH every pattern that
// applies to the name (the name itself, the LITERAL wildcard, PREFIXED
// prefixes of it).
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Known maps a code Apache does not know to UNKNOWN, as its fromCode does.
func (t ResourceType) Known() ResourceType {
	if t < ResourceUnknown || t > ResourceUser {
		return ResourceUnknown
	}
	return t
}

// Known maps a code Apache does not know to UNKNOWN.
func (p PatternType) Known() PatternType {
	if p < PatternUnknown || p > PatternPrefixed {
		return PatternUnknown
	}
	return p
}

// Known maps a code Apache does not know to UNKNOWN.
func (o Operation) Known() Operation {
	if o < OpUnknown || o > OpTwoPhaseCommit {
		return OpUnknown
	}
	return o
}

// Known maps a code Apache does not know to UNKNOWN.
func (p Permission) Known() Permission {
	if p < PermissionUnknown || p > PermissionAllow {
		return PermissionUnknown
	}
	return p
}

// Unknown says which half of the filter names an UNKNOWN value ("" when
// neither): Apache refuses such a filter in DeleteAcls.
func (f Filter) Unknown() string {
	switch {
	case f.ResourceType.Known() == ResourceUnknown || f.PatternType.Known() == PatternUnknown:
		return "Unknown patternFilter."
	case f.Operation.Known() == OpUnknown || f.Permission.Known() == PermissionUnknown:
		return "Unknown entryFilter."
	}
	return ""
}

// Matches reports whether the filter selects a.
func (f Filter) Matches(a ACL) bool {
	return f.matchesPattern(a) && f.matchesEntry(a)
}

func (f Filter) matchesPattern(a ACL) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != a.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == PatternAny || f.PatternType == a.PatternType {
		return name == a.ResourceName
	}
	switch a.PatternType {
	case PatternLiteral:
		return name == a.ResourceName || a.ResourceName == Wildcard
	case PatternPrefixed:
		return len(name) >= len(a.ResourceName) && name[:len(a.ResourceName)] == a.ResourceName
	}
	return false
}

func (f Filter) matchesEntry(a ACL) bool {
	if f.Principal != nil && *f.Principal != a.Principal {
		return false
	}
	if f.Host != nil && *f.Host != a.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != a.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == a.Permission
}
