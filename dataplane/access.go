// This file implements Cloudflare Access on the request path.

package dataplane

import (
	"net/http"
	"slices"

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
// the token's identity in the rule's identity headers. A token naming a
// key the team's set lacks, as after Cloudflare rotated it, has the proxy
// ask the controller for the team's keys again (UnknownAccessKeys).
//
// The token is the Cf-Access-Jwt-Assertion header, which Access adds to
// every request it approves; without it, the CF_Authorization cookie a
// browser carries (the first not empty, if there are several). A request
// with two such header fields is refused as malformed.
//
// Identity reaches a backend only from the proxy, on every rule,
// protected or not, and every listener (identityNames): a client's
// Cf-Access-Authenticated-User-Email, Cf-Access-Jwt-Assertion, and every
// header a protected rule of the config writes, are dropped in any case
// and with '_' for '-' (as CGI, WSGI and PHP read them), and so are its
// CF_Authorization cookies, in any case. On a protected rule the proxy
// then writes what it verified: the identity headers, the token in
// Cf-Access-Jwt-Assertion, and, when the client sent CF_Authorization
// cookies, exactly one, with the token. So a backend that reads the last
// of two cookies (Python's http.cookies), or a twin header, reads the
// token the proxy checked or none.

const (
	accessHeader = compiled.TokenHeader
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
	token, ok := accessToken(x.r.Header)
	if ok {
		id, reason = x.h.p.access.Verify(token, x.cc.accessKeys[a.Team], a.Policy, x.start)
	}
	x.h.p.stats.Access[reason].Add(1)
	if reason == cfaccess.ReasonUnknownKey {
		x.h.p.unknownKeys.Note(a.Team, x.start)
	}
	if reason != cfaccess.ReasonNone {
		return x.answer(http.StatusForbidden, accessRefusal)
	}
	x.identity, x.token = id, token
	return false
}

// UnknownAccessKeys are the teams whose tokens named a key the team's set
// in the config lacks, as after a key rotation: the config client asks
// the controller to fetch their keys again.
func (p *Proxy) UnknownAccessKeys() *cfaccess.UnknownKeys { return p.unknownKeys }

// accessToken is the request's Access token: the header, else the cookie;
// "" when it has neither. Two header fields are no token (ok false).
func accessToken(h http.Header) (token string, ok bool) {
	if v := h[accessHeader]; len(v) > 1 {
		return "", false
	} else if len(v) == 1 && v[0] != "" {
		return v[0], true
	}
	return httpsyntax.CookieValue(h["Cookie"], accessCookie), true
}

// Headers of Cloudflare's that carry an identity: the edge sets them on a
// request Access approved. Only the proxy may set them here.
const (
	edgeEmailHeader = "Cf-Access-Authenticated-User-Email"
)

// identityNames are the header names only the proxy may write: Cloudflare
// Access's own and each identity header a protected rule of the config
// names. A request's header is one of them when its name is, ASCII case
// ignored and '_' read as '-' (has).
type identityNames struct {
	// lengths has bit n set for a name of n bytes (n < 128): most
	// header names are ruled out by their length alone.
	lengths [2]uint64
	names   []string
}

// identityNamesOf gathers the identity header names of rules.
func identityNamesOf(rules []servedRule) *identityNames {
	s := &identityNames{}
	s.add(accessHeader)
	s.add(edgeEmailHeader)
	for i := range rules {
		if rules[i].Rule == nil {
			continue // a deleted route's rule ID (patch.go)
		}
		if a := rules[i].Access; a != nil {
			for _, n := range a.Headers.List() {
				s.add(n)
			}
		}
	}
	return s
}

func (s *identityNames) add(name string) {
	if name == "" || slices.ContainsFunc(s.names, func(n string) bool { return sameFieldName(name, n) }) {
		return
	}
	s.names = append(s.names, name)
	if n := len(name); n < 128 {
		s.lengths[n/64] |= 1 << (n % 64)
	}
}

// has reports whether header k is one of the names; a nil set has
// Cloudflare's alone.
func (s *identityNames) has(k string) bool {
	if s == nil {
		return sameFieldName(k, accessHeader) || sameFieldName(k, edgeEmailHeader)
	}
	if n := len(k); n < 128 && s.lengths[n/64]&(1<<(n%64)) == 0 {
		return false
	}
	for _, n := range s.names {
		if sameFieldName(k, n) {
			return true
		}
	}
	return false
}

// accessCookies is the Cookie value sent to the backend when the
// client's carry a CF_Authorization cookie (in any case): the client's
// cookies without it, and, on a protected rule (token, verified), one
// CF_Authorization with the token. set is false when the client sent
// none: its Cookie fields go as they came. It allocates only when there
// is one to drop.
func accessCookies(cookies []string, token string) (value string, set bool) {
	if len(cookies) == 0 || !httpsyntax.HasCookie(cookies, accessCookie) {
		return "", false
	}
	value = httpsyntax.WithoutCookie(cookies, accessCookie)
	if token != "" {
		if value != "" {
			value += "; "
		}
		value += accessCookie + "=" + token
	}
	return value, true
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
