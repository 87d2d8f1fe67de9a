// Package authz decides whether a principal may perform an operation on a
// resource, with the rules of Apache Kafka's StandardAuthorizer: ACLs on a
// resource type and a LITERAL name, the LITERAL wildcard "*" or a PREFIXED
// name; DENY before ALLOW; ALLOW of READ, WRITE, DELETE or ALTER implying
// DESCRIBE and ALLOW of ALTER_CONFIGS implying DESCRIBE_CONFIGS; ALL
// matching every operation; the principal "User:*" matching every
// principal; the host "*" matching every host, and CIDR hosts from
// metadata.version 4.4-IV1; super.users allowed everything; and
// allow.everyone.if.no.acl.found deciding for a resource no ACL names.
//
// It owns the ACL index: ACLs grouped by (resource type, name) so that a
// decision costs one map lookup for the literal name, one for the
// wildcard, and one per distinct PREFIXED name length that exists for
// the resource type (none in the common case). The index is built from a
// metadata image's ACLs and kept current by applying the committed
// AccessControlEntryRecord, RemoveAccessControlEntryRecord and
// metadata.version records, on every node, so a change takes effect where
// it is replayed.
//
// It is pure and deterministic: no goroutines, no clock, no I/O, no
// logging. It never validates ACLs a client asks to create (the
// controller does, before writing records), never parses credentials
// (package server knows who a connection is), and never decides which
// operation an API needs (server's table does).
package authz
