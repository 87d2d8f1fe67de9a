package controller

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/metadata"
)

// mvCIDRACLs is metadata.version 4.4-IV1, from which an ACL's host may be a
// CIDR range (Apache's isCidrAclSupported).
const mvCIDRACLs = 32

// TopicName is the committed name of the topic with id, for the
// authorizer, which checks topics by name (DeleteTopics by id).
func (c *Controller) TopicName(id metadata.Uuid) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if t, ok := c.image.Topics[id]; ok {
		return t.Name, true
	}
	return "", false
}

// CreateACLs: see Core.CreateACLs.
func (c *Controller) CreateACLs(ctx context.Context, acls []authz.ACL) ([]error, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func([]error, error)) { core.CreateACLs(now, acls, answer) })
}

// DeleteACLs: see Core.DeleteACLs.
func (c *Controller) DeleteACLs(ctx context.Context, filters []authz.Filter) ([]DeletedACLs, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func([]DeletedACLs, error)) {
		core.DeleteACLs(now, filters, answer)
	})
}

// DeletedACLs is one DeleteAcls filter's result: the ACLs it removed, or
// why it was refused.
type DeletedACLs struct {
	Err     error
	Deleted []authz.ACL
}

// CreateACLs validates each ACL as Apache's AclApis and AclControlManager
// do and writes an AccessControlEntryRecord for each new one; an ACL that
// exists already (or twice in the request) succeeds without a record. The
// answer, one error per ACL (nil for success), comes when the records
// commit.
func (c *Core) CreateACLs(now time.Time, acls []authz.ACL, answer func([]error, error)) {
	results := make([]error, len(acls))
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		existing := make(map[authz.ACL]bool, len(im.ACLs))
		for _, r := range im.ACLs {
			existing[aclOf(&r)] = true
		}
		var recs []metadata.Record
		for i, a := range acls {
			if err := validateNewACL(a, metadataVersion(im)); err != nil {
				results[i] = err
				continue
			}
			if existing[a] {
				continue
			}
			existing[a] = true
			recs = append(recs, &metadata.AccessControlEntryRecord{Id: c.newACLID(im), ResourceType: int8(a.ResourceType),
				ResourceName: a.ResourceName, PatternType: int8(a.PatternType), Principal: a.Principal, Host: a.Host,
				Operation: int8(a.Operation), PermissionType: int8(a.Permission)})
		}
		return recs, nil
	}, func(_ written, err error) { answer(results, err) })
}

// newACLID draws an id no ACL has, from the source topic ids come from.
func (c *Core) newACLID(im *metadata.Image) metadata.Uuid {
	for {
		id := metadata.Uuid(newTopicID(c.settings.TopicIDs))
		if _, taken := im.ACLs[id]; !taken {
			return id
		}
	}
}

func aclOf(r *metadata.AccessControlEntryRecord) authz.ACL {
	return authz.ACL{ResourceType: authz.ResourceType(r.ResourceType), ResourceName: r.ResourceName,
		PatternType: authz.PatternType(r.PatternType), Principal: r.Principal, Host: r.Host,
		Operation: authz.Operation(r.Operation), Permission: authz.Permission(r.PermissionType)}
}

// validateNewACL is Apache's checks, in its order: the cluster's one name
// and a non-empty name (AclApis), then the types, the principal's colon
// and the host (AclControlManager.validateNewAcl, 4.4).
func validateNewACL(a authz.ACL, mv int16) error {
	invalid := func(format string, args ...any) error { return apiErr(kerr.InvalidRequest.Code, format, args...) }
	switch {
	case a.ResourceType == authz.ResourceCluster && a.ResourceName != authz.ClusterName:
		return invalid("The only valid name for the CLUSTER resource is %s", authz.ClusterName)
	case a.ResourceName == "":
		return invalid("Invalid empty resource name")
	}
	switch a.ResourceType.Known() {
	case authz.ResourceUnknown, authz.ResourceAny:
		return invalid("Invalid resourceType %s", a.ResourceType.Known())
	}
	if p := a.PatternType.Known(); p != authz.PatternLiteral && p != authz.PatternPrefixed {
		return invalid("Invalid patternType %s", p)
	}
	switch a.Operation.Known() {
	case authz.OpUnknown, authz.OpAny:
		return invalid("Invalid operation %s", a.Operation.Known())
	}
	if p := a.Permission.Known(); p != authz.PermissionAllow && p != authz.PermissionDeny {
		return invalid("Invalid permissionType %s", p)
	}
	if !strings.Contains(a.Principal, ":") {
		return invalid("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", a.Principal)
	}
	switch {
	case a.Host == "":
		return invalid("Host pattern cannot be null or empty")
	case a.Host != authz.Wildcard && strings.Contains(a.Host, "/"):
		if mv < mvCIDRACLs {
			return apiErr(kerr.UnsupportedVersion.Code, "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.")
		}
		if _, err := netip.ParsePrefix(a.Host); err != nil {
			return invalid("Invalid CIDR notation '%s': %v", a.Host, err)
		}
	}
	return nil
}

// DeleteACLs removes every ACL each filter matches, writing a
// RemoveAccessControlEntryRecord for each (once, should two filters match
// it); a filter with an UNKNOWN part is refused, the others still apply.
// The answer comes when the records commit.
func (c *Core) DeleteACLs(now time.Time, filters []authz.Filter, answer func([]DeletedACLs, error)) {
	results := make([]DeletedACLs, len(filters))
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		removed := map[metadata.Uuid]bool{}
		var recs []metadata.Record
		ids := sortedACLIDs(im)
		for i, f := range filters {
			if why := f.Unknown(); why != "" {
				results[i].Err = apiErr(kerr.InvalidRequest.Code, "%s", why)
				continue
			}
			for _, id := range ids {
				r := im.ACLs[id]
				a := aclOf(&r)
				if !f.Matches(a) {
					continue
				}
				results[i].Deleted = append(results[i].Deleted, a)
				if !removed[id] {
					removed[id] = true
					recs = append(recs, &metadata.RemoveAccessControlEntryRecord{Id: id})
				}
			}
		}
		return recs, nil
	}, func(_ written, err error) { answer(results, err) })
}

func sortedACLIDs(im *metadata.Image) []metadata.Uuid {
	ids := make([]metadata.Uuid, 0, len(im.ACLs))
	for id := range im.ACLs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareUuid)
	return ids
}
