package dataplane

import (
	"net/http"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// Cloudflare Access on a protected rule (proxycfg.Rule.Access): every
// request must carry a token Access signed for one of the rule's
// applications, which package cfaccess verifies with the team's keys
// from the config. A request without one is answered 403 (a gRPC client
// gets PERMISSION_DENIED) and counted by reason; the client learns no
// more than that a valid token is needed. One that passes goes on with
// the token's identity in the rule's identity headers, after every copy
// of them the client sent is removed (in any case, and with '_' for '-',
// as some servers read them). A token naming a key the team's set lacks,
// as after Cloudflare rotated it, has the proxy ask the controller for the
// team's keys again (UnknownAccessKeys).
//
// The token is the Cf-Access-Jwt-Assertion header, which Access adds to
// every request it approves; without it, the CF_Authorization cookie a
// browser carries (the first not empty, if there are several). A request with two
// such header fields is refused as malformed.

const (
	accessHeader = "Cf-Access-Jwt-Assertion"
	accessCookie = "CF_Authorization"
)

const accessRefusal = "a valid Cloudflare Access token is required"

// checkAccess lets a protected rule's request through only with a token
// the rule accepts, noting its identity for the backend.
func (x *exchange) checkAccess() bool {
	a := x.rule.Access
	if a == nil {
		return false
	}
	var id *cfaccess.Identity
	reason := cfaccess.ReasonMalformed
	if token, ok := accessToken(x.r.Header); ok {
		id, reason = x.h.p.access.Verify(token, x.cc.accessKeys[a.Team], a.Policy, x.start)
	}
	x.h.p.stats.Access[reason].Add(1)
	if reason == cfaccess.ReasonUnknownKey {
		x.h.p.unknownKeys.Note(a.Team, x.start)
	}
	if reason != cfaccess.ReasonNone {
		return x.answer(http.StatusForbidden, accessRefusal)
	}
	x.identity = id
	return false
}

// UnknownAccessKeys are the teams whose tokens named a key the team's set
// in the config lacks, as after a key rotation: the config client asks
// the controller to fetch their keys again.
func (p *Proxy) UnknownAccessKeys() *cfaccess.UnknownKeys { return p.unknownKeys }

// accessToken is the request's Access token: the header, else the cookie;
// "" when it has neither. Two header fields are no token (ok false): a
// backend reading the other could be told another identity than the one
// checked here.
func accessToken(h http.Header) (token string, ok bool) {
	if v := h[accessHeader]; len(v) > 1 {
		return "", false
	} else if len(v) == 1 && v[0] != "" {
		return v[0], true
	}
	return httpsyntax.CookieValue(h["Cookie"], accessCookie), true
}

// identityHeader says whether field k is one of the rule's identity
// headers, which only the proxy may set.
func identityHeader(k string, names *compiled.AccessHeaders) bool {
	for _, n := range names.List() {
		if n != "" && sameFieldName(k, n) {
			return true
		}
	}
	return false
}

// identityFields are the identity headers and their values, for the
// request to the backend: each set name with the token's value, or an
// empty name where there is nothing to send.
func identityFields(names *compiled.AccessHeaders, id *cfaccess.Identity) [4][2]string {
	values := [4]string{id.Email, id.Subject, id.GroupsValue(), id.ServiceToken} // List's order
	var out [4][2]string
	for i, n := range names.List() {
		if values[i] != "" {
			out[i] = [2]string{n, values[i]}
		}
	}
	return out
}

// keepAccessKeys gives a config whose team keys did not parse the keys
// the proxy served for that team before, if any, and says so: a proxy
// keeps the last good keys. Without them, the team's rules fail closed.
// p.mu is held.
func (p *Proxy) keepAccessKeys(cc *compiledConfig) {
	for _, problem := range cc.accessProblems {
		p.opts.Log.Warn("access keys", "problem", problem)
	}
	prev := p.current.Load()
	for team, keys := range cc.accessKeys {
		if keys != nil {
			continue
		}
		if prev != nil && prev.accessKeys[team] != nil {
			cc.accessKeys[team] = prev.accessKeys[team]
			p.opts.Log.Warn("access keys: keeping the team's last good keys", "team", team)
			continue
		}
		p.opts.Log.Error("access keys: none usable, so the team's protected rules refuse every request", "team", team)
	}
}
