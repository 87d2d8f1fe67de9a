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

// newAuthorizer builds the authorizer when authorizer.class.name asks for
// one, over the controller's index of committed ACLs (an empty index when
// the backend has no controller, as in some tests).
func (s *Server) newAuthorizer() *authz.Authorizer {
	if !s.cfg.Authorizer.Enabled {
		return nil
	}
	acls := authz.NewIndex()
	if ctl := s.controllerOf(); ctl != nil {
		acls = ctl.ACLs()
	}
	a := authz.New(acls, s.cfg.Authorizer.SuperUsers, s.cfg.Authorizer.AllowIfNoACL)
	if b, ok := s.backend.(interface{ CaughtUp() <-chan struct{} }); ok {
		a.WaitForLoad(b.CaughtUp())
	}
	return a
}

// dispatch runs a request's handler after the check accessRules names for
// its key. Both the connection loop and Envelope come through here, so a
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
	rule, known := accessRules[r.Header.Key]
	switch {
	case !known:
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
