// This file puts stream routes behind Cloudflare Access.

package translate

import (
	"fmt"
	"strings"
)

// Access on stream routes. An AccessPolicy protects a TCPRoute's or
// TLSRoute's rule as it does an HTTP rule (access.go: the most specific
// of the policies naming its rule, its route, the listener, the
// Gateway), but the proxy cannot check a raw stream, which carries no
// token it can read: cloudflared checks it, before it dials the proxy's
// origin port, from the tunnel's ingress rule (StreamService.Access: the
// team's name and the policy's audiences, its application's tag among
// them). So on a stream:
//
//   - the token's team and audience are enforced, at the tunnel only: a
//     client inside the cluster reaching the listener is not checked;
//   - require is not, but for what the policy's application lets log in
//     (spec.application: emails, email domains, service tokens), which
//     Access enforces before it issues the token; groups never;
//   - identityHeaders are not: the backend gets bytes, not headers.
//
// Each ancestor under which a policy protects stream routes says so
// (AccessConditionStreamEnforcement). A hostname whose policy cannot be
// applied (invalid, or its application's tag not known yet) is not
// published through the tunnel until it can be: never a stream let
// through unchecked.

// AccessConditionStreamEnforcement is an AccessPolicy ancestor's
// condition when it protects TCPRoutes or TLSRoutes: True when the
// tunnel enforces all the policy asks of a stream, False (reason
// PartiallyEnforced) naming what it cannot.
const AccessConditionStreamEnforcement = "StreamEnforcement"

const (
	reasonStreamEnforced          = "Enforced"
	reasonStreamPartiallyEnforced = "PartiallyEnforced"
)

// streamAccess is the policy protecting a stream route's rule served
// through an attachment, or nil.
func (t *translator) streamAccess(r *routeInfo, a *attachment, rule string) *accessInfo {
	if t.accessByTarget == nil {
		return nil
	}
	return t.ruleAccess(r.kind, r.meta.Namespace, r.meta.Name, rule, t.listenerAccess(a.listener))
}

// tunnelAccess is what cloudflared checks for a policy (nil for none),
// and false when the policy cannot be applied yet.
func tunnelAccess(ai *accessInfo) (*StreamAccess, bool) {
	switch {
	case ai == nil:
		return nil, true
	case ai.access == nil:
		return nil, false
	}
	team, _, _ := strings.Cut(ai.access.Team, ".")
	return &StreamAccess{TeamName: team, Audiences: ai.access.Audiences}, true
}

// streamsWithheld is what an invalid policy's Accepted message adds
// where it protects stream routes.
func streamsWithheld(u *accessUse) string {
	if !u.streams {
		return ""
	}
	return ", and its stream routes' hostnames are not published through the tunnel"
}

// streamEnforcement sets AccessConditionStreamEnforcement on an ancestor
// under which the policy protects stream routes.
func streamEnforcement(ai *accessInfo, c *conds) {
	s := &ai.obj.Spec
	var not []string
	if r := s.Require; r != nil {
		if s.Application == nil && (len(r.Emails) > 0 || len(r.EmailDomains) > 0 || len(r.ServiceTokens) > 0) {
			not = append(not, "require.emails, emailDomains and serviceTokens (let spec.application make the Access application, whose policies enforce them at login)")
		}
		if len(r.Groups) > 0 {
			not = append(not, "require.groups")
		}
	}
	if s.IdentityHeaders != nil {
		not = append(not, "identityHeaders (a stream has no headers)")
	}
	enforced := "on TCPRoute and TLSRoute streams cloudflared checks each token's team and audience before the proxy sees a byte, for connections through the tunnel only"
	if ai.appPending {
		enforced += "; their hostnames are published through the tunnel once the application's audience tag is known"
	}
	if len(not) == 0 {
		c.set(AccessConditionStreamEnforcement, true, reasonStreamEnforced, enforced)
		return
	}
	c.set(AccessConditionStreamEnforcement, false, reasonStreamPartiallyEnforced,
		fmt.Sprintf("%s; not enforced on streams, which carry no token the proxy can read: %s", enforced, strings.Join(not, "; ")))
}
