// This file translates HTTPRoute rules: matches, filters, timeouts,
// session persistence.

package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

const (
	kindHTTPRoute = "HTTPRoute"
	kindGRPCRoute = "GRPCRoute"
)

// httpRules translates an HTTPRoute's rules. gw supplies the backend
// client certificate (the first Gateway the route attaches to); access is
// the AccessPolicy of the listeners, unless a rule or the route has its
// own.
func (t *translator) httpRules(r *gwv1.HTTPRoute, route *proxycfg.Route, gw *gatewayInfo, access *accessInfo) ruleSet {
	var rs ruleSet
	names := make([]*gwv1.SectionName, len(r.Spec.Rules))
	for i := range r.Spec.Rules {
		names[i] = r.Spec.Rules[i].Name
	}
	if dup := duplicateRuleName(names); dup != "" {
		rs.dropped = append(rs.dropped, dup)
		return rs
	}
	for i := range r.Spec.Rules {
		src := &r.Spec.Rules[i]
		out := proxycfg.Rule{}
		if src.Name != nil {
			out.Name = string(*src.Name)
		}
		policy := t.ruleAccess(kindHTTPRoute, r.Namespace, r.Name, out.Name, access)
		rs.protectedBy(policy)
		for _, m := range src.Matches {
			out.Matches = append(out.Matches, httpMatch(&m))
		}
		if len(out.Matches) == 0 {
			out.Matches = []proxycfg.Match{{Path: everyPath()}}
		}
		out.Filters = t.httpFilters(kindHTTPRoute, src.Filters, r.Namespace, gw, &rs, &out)
		for j := range src.BackendRefs {
			br := &src.BackendRefs[j]
			b := t.backend(kindHTTPRoute, r.Namespace, &br.BackendRef, false, gw, &rs)
			var failed proxycfg.Rule
			b.Filters = t.httpFilters(kindHTTPRoute, br.Filters, r.Namespace, gw, &rs, &failed)
			if failed.FailStatus != 0 {
				b.Status = failed.FailStatus // this backend's share fails closed
			}
			out.Backends = append(out.Backends, b)
		}
		if err := t.httpSettings(ruleID(kindHTTPRoute, r.Namespace, r.Name, i, src.Name), src, &out); err != nil {
			rs.dropped = append(rs.dropped, fmt.Sprintf("rule %d: %v", i, err))
			continue
		}
		policy.protect(&out)
		rs.keep(t.cache, newRuleKey(r, i, &out), route, i, out)
	}
	return rs
}

func httpMatch(m *gwv1.HTTPRouteMatch) proxycfg.Match {
	out := proxycfg.Match{Path: everyPath()}
	if m.Path != nil {
		if m.Path.Type != nil {
			out.Path.Type = string(*m.Path.Type)
		}
		if m.Path.Value != nil {
			out.Path.Value = *m.Path.Value
		}
	}
	if m.Method != nil {
		out.Method = string(*m.Method)
	}
	for _, h := range m.Headers {
		vm := proxycfg.ValueMatch{Type: proxycfg.MatchExact, Name: string(h.Name), Value: h.Value}
		if h.Type != nil {
			vm.Type = string(*h.Type)
		}
		out.Headers = append(out.Headers, vm)
	}
	for _, q := range m.QueryParams {
		vm := proxycfg.ValueMatch{Type: proxycfg.MatchExact, Name: string(q.Name), Value: q.Value}
		if q.Type != nil {
			vm.Type = string(*q.Type)
		}
		out.Query = append(out.Query, vm)
	}
	return out
}

// httpFilters translates the filters of a rule or a backendRef of a route
// of kind routeKind. A filter tunnelgate cannot run makes rule fail closed.
func (t *translator) httpFilters(routeKind string, fs []gwv1.HTTPRouteFilter, ns string, gw *gatewayInfo, rs *ruleSet, rule *proxycfg.Rule) []proxycfg.Filter {
	var out []proxycfg.Filter
	for i := range fs {
		f := &fs[i]
		switch {
		case f.Type == gwv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil:
			out = append(out, proxycfg.Filter{Type: proxycfg.FilterRequestHeaderModifier, RequestHeaderModifier: headerModifier(f.RequestHeaderModifier)})
		case f.Type == gwv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil:
			out = append(out, proxycfg.Filter{Type: proxycfg.FilterResponseHeaderModifier, ResponseHeaderModifier: headerModifier(f.ResponseHeaderModifier)})
		case f.Type == gwv1.HTTPRouteFilterRequestRedirect && f.RequestRedirect != nil:
			out = append(out, proxycfg.Filter{Type: proxycfg.FilterRequestRedirect, RequestRedirect: redirect(f.RequestRedirect)})
		case f.Type == gwv1.HTTPRouteFilterURLRewrite && f.URLRewrite != nil:
			out = append(out, proxycfg.Filter{Type: proxycfg.FilterURLRewrite, URLRewrite: rewrite(f.URLRewrite)})
		case f.Type == gwv1.HTTPRouteFilterCORS && f.CORS != nil:
			out = append(out, proxycfg.Filter{Type: proxycfg.FilterCORS, CORS: cors(f.CORS)})
		case f.Type == gwv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil:
			if m, ok := t.mirror(routeKind, ns, f.RequestMirror, routeKind == kindGRPCRoute, gw, rs); ok {
				out = append(out, m)
			}
		default:
			rs.unsupportedFilter(string(f.Type), f.ExtensionRef, rule)
		}
	}
	return out
}

// httpSettings translates timeouts, retry and session persistence; rule
// identifies the rule (ruleID).
func (t *translator) httpSettings(rule string, src *gwv1.HTTPRouteRule, out *proxycfg.Rule) error {
	if to := src.Timeouts; to != nil && (to.Request != nil || to.BackendRequest != nil) {
		out.Timeouts = &proxycfg.Timeouts{}
		if to.Request != nil {
			d, err := parseDuration(string(*to.Request))
			if err != nil {
				return fmt.Errorf("timeouts.request: %w", err)
			}
			out.Timeouts.Request = proxycfg.Duration(d)
		}
		if to.BackendRequest != nil {
			d, err := parseDuration(string(*to.BackendRequest))
			if err != nil {
				return fmt.Errorf("timeouts.backendRequest: %w", err)
			}
			out.Timeouts.BackendRequest = proxycfg.Duration(d)
		}
		if r, b := out.Timeouts.Request, out.Timeouts.BackendRequest; r != 0 && b > r {
			return fmt.Errorf("timeouts.backendRequest %v is longer than timeouts.request %v", time.Duration(b), time.Duration(r))
		}
	}
	// attempts defaults to 1 (the CRD's default since v1.7; an object
	// stored by v1.6 CRDs may lack it), and an explicit 0 disables
	// retries, as v1.7 says: no retry in the config at all.
	if rt := src.Retry; rt != nil && (rt.Attempts == nil || *rt.Attempts != 0) {
		out.Retry = &proxycfg.Retry{Attempts: 1}
		if rt.Attempts != nil {
			out.Retry.Attempts = *rt.Attempts
		}
		for _, c := range rt.Codes {
			out.Retry.Codes = append(out.Retry.Codes, int(c))
		}
		if rt.Backoff != nil {
			d, err := parseDuration(string(*rt.Backoff))
			if err != nil {
				return fmt.Errorf("retry.backoff: %w", err)
			}
			out.Retry.Backoff = proxycfg.Duration(d)
		}
	}
	//lint:ignore SA1019 route-inline session persistence is deprecated (GEP-4894) but still in the API: served until it is removed
	if sp := src.SessionPersistence; sp != nil {
		s, err := sessionPersistence(rule, sp)
		if err != nil {
			return err
		}
		out.SessionPersistence = s
	}
	return nil
}

// sessionPersistence translates a rule's session persistence. rule names
// the rule (kind/namespace/name/index) for the cookie name generated when
// cookie.name is unset, which the spec asks to be unique: one per rule.
// The cookie path defaults to "/" (the proxy's default, left out of the
// config).
func sessionPersistence(rule string, sp *gwv1.SessionPersistence) (*proxycfg.SessionPersistence, error) {
	s := &proxycfg.SessionPersistence{Type: proxycfg.SessionCookie, Lifetime: proxycfg.LifetimeSession}
	if sp.Type != nil {
		s.Type = string(*sp.Type)
	}
	if sp.AbsoluteTimeout != nil {
		d, err := parseDuration(string(*sp.AbsoluteTimeout))
		if err != nil {
			return nil, fmt.Errorf("sessionPersistence.absoluteTimeout: %w", err)
		}
		s.AbsoluteTimeout = proxycfg.Duration(d)
	}
	switch s.Type {
	case proxycfg.SessionHeader:
		if sp.Cookie != nil {
			return nil, errors.New("sessionPersistence: cookie is set with type Header; remove it or use type Cookie")
		}
		if sp.Header == nil || sp.Header.Name == "" {
			return nil, errors.New("sessionPersistence: type Header needs header.name")
		}
		s.Name = string(sp.Header.Name)
	case proxycfg.SessionCookie:
		if sp.Header != nil {
			return nil, errors.New("sessionPersistence: header is set with type Cookie; remove it or use type Header")
		}
		if c := sp.Cookie; c != nil {
			if c.Name != nil {
				s.Name = string(*c.Name)
			}
			if c.Path != nil && *c.Path != "/" {
				s.Path = *c.Path
			}
			if c.LifetimeType != nil {
				s.Lifetime = string(*c.LifetimeType)
			}
		}
		if s.Name == "" {
			s.Name = sessionCookieName(rule)
		}
	}
	return s, nil
}

// sessionCookieName is the cookie name of a rule whose cookie.name is
// unset: "tg-session-" and 12 hex digits of a hash of the rule's identity,
// so that it is the same on every proxy and across restarts, and differs
// from rule to rule.
func sessionCookieName(rule string) string {
	sum := sha256.Sum256([]byte(rule))
	return "tg-session-" + hex.EncodeToString(sum[:6])
}

// everyPath is the path of a match without one: the Gateway API's
// default, PathPrefix "/", written out as the wire config wants.
func everyPath() *proxycfg.PathMatch {
	return &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}
}

// duplicateRuleName says which rules share a name, or "". Rule names are
// unique within a route: the CRDs validate it (in the Standard channel
// since v1.7), and a route that slipped past them (CRDs of v1.6's
// standard channel, standalone files) is refused whole: no rule of it
// can be told apart by name, which policies and metrics go by.
func duplicateRuleName(names []*gwv1.SectionName) string {
	first := map[gwv1.SectionName]int{}
	for i, n := range names {
		if n == nil || *n == "" {
			continue
		}
		if j, dup := first[*n]; dup {
			return fmt.Sprintf("rules %d and %d are both named %q; rule names must be unique within a route", j, i, *n)
		}
		first[*n] = i
	}
	return ""
}

// ruleID names a route's rule: kind/namespace/name/ and the rule's name,
// or its index when it has none (so a named rule keeps its identity when
// the rules are reordered).
func ruleID(kind, namespace, name string, i int, ruleName *gwv1.SectionName) string {
	id := kind + "/" + namespace + "/" + name + "/"
	if ruleName != nil && *ruleName != "" {
		return id + "name=" + string(*ruleName)
	}
	return id + strconv.Itoa(i)
}
