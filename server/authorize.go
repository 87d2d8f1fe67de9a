// authorize.go is the authorization mechanism every handler shares: the
// check of the access rule a handler file registers with its key (regKey),
// made before the handler runs, the decisions and refusal texts the
// per-item checks in the handler files use, and the rate-limited log of
// refusals. The rules themselves live in the NN_name.go files.

package server

import (
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

// accessRule is what Apache's ControllerApis (4.1 and 4.4 agree) checks
// before it serves one API key, when an authorizer is configured. Each
// handler file registers its key's rule with regKey; a rule must be open,
// or name a cluster operation, or describe its per-item checks.
type accessRule struct {
	name string // the API's name, for logs and docs
	// cluster is the operation needed on CLUSTER:kafka-cluster, checked
	// before the handler runs (Apache's authorizeClusterOperation); a
	// request without it is answered with CLUSTER_AUTHORIZATION_FAILED.
	cluster authz.Operation
	// items says what the handler checks itself, item by item, answering
	// each refused item with its own error code (CreateTopics: CREATE on
	// the cluster or on each topic, ...). It is documentation: the check
	// lives in the handler's file, an authorizeX that removes the refused
	// items from the request and returns their refusals, which the handler
	// appends to what the controller answers for the rest (Apache likewise
	// answers refused items beside the others); with no authorizer it
	// removes nothing.
	items string
	// open marks the keys every client may send (ApiVersions, SASL).
	open bool
	// refuse builds the answer to a request refused whole when its
	// response carries the error per item rather than at the top; nil sets
	// the response's top-level ErrorCode (and ErrorMessage, if it has one).
	refuse func(req kmsg.Request, code int16, msg *string) kmsg.Response
}

// decided reports whether the rule says anything: a key whose rule says
// nothing is refused to everyone but super users, so that a new handler
// cannot be served unchecked by accident.
func (a accessRule) decided() bool {
	return a.open || a.cluster != authz.OpUnknown || a.items != ""
}

// newAuthorizer builds the authorizer when authorizer.class.name asks for
// one, over the controller's index of committed ACLs (an empty index when
// the backend has no controller, as in some tests).
func (s *Server) newAuthorizer() *authz.Authorizer {
	if !s.cfg.Authorizer.Enabled {
		return nil
	}
	acls := authz.NewIndex()
	if ctl := s.backend.Controller(); ctl != nil {
		acls = ctl.ACLs()
	}
	a := authz.New(acls, s.cfg.Authorizer.SuperUsers, s.cfg.Authorizer.AllowIfNoACL)
	a.WaitForLoad(s.backend.CaughtUp())
	return a
}

// dispatch runs a request's handler after the check of its key's access
// rule. Both the connection loop and Envelope come through here, so a
// forwarded request is checked for the principal it was forwarded for; a
// request started on the connection's goroutine (Server.start) has the
// same check through refused.
func (s *Server) dispatch(def handlerDef, r *Request) (kmsg.Response, error) {
	if out := s.refused(r); out != nil {
		return out, nil
	}
	return def.fn(s, r)
}

// refused is the answer to a request the authorizer refuses as a whole,
// else nil.
func (s *Server) refused(r *Request) kmsg.Response {
	if s.authorizer == nil {
		return nil
	}
	rule := handlers[r.Header.Key].access
	switch {
	case !rule.decided():
		// Never serve a key nobody decided the rule of.
		if !s.allowed(r, authz.OpAll, authz.ResourceCluster, authz.ClusterName) {
			return refuseWhole(rule, r.Body, kerr.ClusterAuthorizationFailed.Code)
		}
	case rule.cluster != authz.OpUnknown:
		if d := s.decide(r, rule.cluster, authz.ResourceCluster, authz.ClusterName, true); !d.Allowed {
			code := kerr.ClusterAuthorizationFailed.Code
			if d.Rule == authz.RuleNotReady {
				// Apache's authorizer throws AuthorizerNotReadyException,
				// which has no error code of its own.
				code = kerr.UnknownServerError.Code
			}
			return refuseWhole(rule, r.Body, code)
		}
	}
	return nil
}

// allowedQuietly is allowed without the log line, for the checks Apache
// makes with logIfDenied false (a cluster-wide grant tried before the
// per-topic one, the configs a CreateTopics answer may show).
func (s *Server) allowedQuietly(r *Request, op authz.Operation, t authz.ResourceType, name string) bool {
	return s.decide(r, op, t, name, false).Allowed
}

// allowed reports whether the request's principal may perform op on the
// resource; always, when no authorizer is configured. A refusal is logged.
func (s *Server) allowed(r *Request, op authz.Operation, t authz.ResourceType, name string) bool {
	return s.decide(r, op, t, name, true).Allowed
}

// decide is the authorizer's decision, a refusal logged when logDenied;
// always allowed when no authorizer is configured.
func (s *Server) decide(r *Request, op authz.Operation, t authz.ResourceType, name string, logDenied bool) authz.Decision {
	if s.authorizer == nil {
		return authz.Decision{Allowed: true}
	}
	act := authz.Action{Principal: r.Principal.String(), Host: r.host(), Operation: op, ResourceType: t, ResourceName: name}
	d := s.authorizer.Authorize(act)
	if !d.Allowed && logDenied {
		s.denials.log(s.log, r, act, d)
	}
	return d
}

// host is the client's address as ACL hosts name it: a forwarded
// request's client, else the connection's peer.
func (r *Request) host() string {
	if r.ClientHost != "" {
		return r.ClientHost
	}
	return authz.HostOf(r.Remote)
}

// refuseWhole answers a request refused as a whole with code.
func refuseWhole(rule accessRule, req kmsg.Request, code int16) kmsg.Response {
	msg := refusalMessage(code)
	if rule.refuse != nil {
		return rule.refuse(req, code, msg)
	}
	resp := req.ResponseKind()
	v := reflect.ValueOf(resp).Elem()
	if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
	if f := v.FieldByName("ErrorMessage"); f.IsValid() && f.Type() == reflect.TypeOf((*string)(nil)) {
		f.Set(reflect.ValueOf(msg))
	}
	return resp
}

// authorizationMessage is the text Apache's Errors give each refusal.
var authorizationMessage = map[int16]string{
	kerr.ClusterAuthorizationFailed.Code: "Cluster authorization failed.",
	kerr.TopicAuthorizationFailed.Code:   "Topic authorization failed.",
	kerr.GroupAuthorizationFailed.Code:   "Group authorization failed.",
}

// refusalMessage is the message of a refusal with code: none for
// UNKNOWN_SERVER_ERROR, whose message Apache's ApiError.fromThrowable
// never sends (it could leak internals).
func refusalMessage(code int16) *string {
	if code == kerr.UnknownServerError.Code {
		return nil
	}
	msg, ok := authorizationMessage[code]
	if !ok {
		msg = kerr.ErrorForCode(code).Error()
	}
	return &msg
}

// counts is how often each name occurs, for the per-item checks: a
// duplicated name is left to the controller, which refuses it as
// INVALID_REQUEST whatever the ACLs say, as Apache checks duplicates
// first.
func counts[T any](items []T, name func(T) string) map[string]int {
	n := map[string]int{}
	for _, it := range items {
		n[name(it)]++
	}
	return n
}

// deniedLog rate-limits the log lines of refusals: a client retrying a
// refused request must not flood the log. At most deniedPerSecond lines a
// second; the next line says how many were left out.
type deniedLog struct {
	mu         sync.Mutex
	window     time.Time
	lines      int
	suppressed int
}

const deniedPerSecond = 10

func (l *deniedLog) log(log zerolog.Logger, r *Request, act authz.Action, d authz.Decision) {
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.window) >= time.Second {
		l.window, l.lines = now, 0
	}
	if l.lines >= deniedPerSecond {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.lines++
	suppressed := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	ev := log.Info().Str("principal", act.Principal).Str("host", act.Host).Str("operation", act.Operation.String()).
		Str("resource", fmt.Sprintf("%s:%s", act.ResourceType, act.ResourceName)).
		Str("api", kmsg.NameForKey(r.Header.Key)).Str("rule", d.String())
	if suppressed > 0 {
		ev = ev.Int("suppressed_before", suppressed)
	}
	ev.Msg("request denied")
}
