package server

import "github.com/kraftd/kraftd/controller"

// tokenPrincipal is who a delegation token request speaks for, and whether
// Apache's ControllerApis.allowTokenRequests lets it touch tokens: never a
// token-authenticated principal; unless forwarded by a broker (whose own
// client connection was checked there), not over PLAINTEXT nor over TLS
// without a client certificate.
func (s *Server) tokenPrincipal(r *Request) controller.TokenPrincipal {
	p := controller.TokenPrincipal{Type: r.Principal.Type, Name: r.Principal.Name, Allowed: true}
	proto := s.protocol(r.Listener)
	switch {
	case r.Principal.TokenAuthenticated:
		p.Allowed = false
	case r.Forwarded:
	case proto == "PLAINTEXT" || proto == "":
		p.Allowed = false
	case proto == "SSL" && r.Principal == Anonymous:
		p.Allowed = false
	}
	return p
}
