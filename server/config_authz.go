package server

import (
	"fmt"
	"strings"

	"github.com/kraftd/kraftd/authz"
)

// Authorizer class names kraftd accepts in authorizer.class.name: Apache's,
// so that an Apache controller's file works unchanged, and kraftd's own
// name for the same rules.
const (
	StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	KraftdAuthorizerClass   = "kraftd.authz.StandardAuthorizer"
)

// AuthorizerSettings are the authorization keys.
type AuthorizerSettings struct {
	// Enabled is authorizer.class.name naming StandardAuthorizer: every
	// request is then checked against the ACLs.
	Enabled bool
	// SuperUsers is super.users: principals ("User:admin") allowed
	// everything, which is how controllers and brokers talk before any
	// ACL exists.
	SuperUsers []string
	// AllowIfNoACL is allow.everyone.if.no.acl.found.
	AllowIfNoACL bool
}

// authorizerKeys are the keys authorizerSettings reads; refuseSecurity
// leaves them to it.
var authorizerKeys = map[string]bool{"authorizer.class.name": true, "super.users": true, "allow.everyone.if.no.acl.found": true}

// authorizerSettings reads the authorization keys. An authorizer class
// kraftd does not have stops start-up (a custom Java class cannot run
// here, and serving without it would serve everyone); super.users or
// allow.everyone.if.no.acl.found=false without an authorizer ask for
// checks nothing would make, and stop start-up too.
func (p *parser) authorizerSettings() AuthorizerSettings {
	var a AuthorizerSettings
	switch class := strings.TrimSpace(p.str("authorizer.class.name", "")); class {
	case "":
		delete(p.used, "authorizer.class.name")
	case StandardAuthorizerClass, KraftdAuthorizerClass:
		a.Enabled = true
	default:
		p.setErr("authorizer.class.name", fmt.Errorf("%q is not an authorizer kraftd has (it has %s, also named %s); "+
			"remove the key or name one of these", class, StandardAuthorizerClass, KraftdAuthorizerClass))
		return a
	}
	su := p.str("super.users", "")
	allowText := p.str("allow.everyone.if.no.acl.found", "")
	a.SuperUsers = authz.ParseSuperUsers(su)
	a.AllowIfNoACL = p.boolean("allow.everyone.if.no.acl.found")
	if !a.Enabled {
		if len(a.SuperUsers) > 0 {
			p.setErr("super.users", errNoAuthorizer)
		} else if allowText != "" && !a.AllowIfNoACL {
			p.setErr("allow.everyone.if.no.acl.found", errNoAuthorizer)
		}
		// Unused without an authorizer: reported as unknown, as before.
		if strings.TrimSpace(su) == "" {
			delete(p.used, "super.users")
		}
		if a.AllowIfNoACL {
			delete(p.used, "allow.everyone.if.no.acl.found")
		}
		return AuthorizerSettings{}
	}
	for _, s := range a.SuperUsers {
		if typ, name, ok := strings.Cut(s, ":"); !ok || typ == "" || name == "" {
			p.setErr("super.users", fmt.Errorf("%q is not a principal (want Type:Name, such as User:admin)", s))
		}
	}
	return a
}

var errNoAuthorizer = fmt.Errorf("asks for authorization, but authorizer.class.name is not set; set it to %s "+
	"or remove the key", StandardAuthorizerClass)
