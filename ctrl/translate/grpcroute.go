// This file translates GRPCRoute rules.

package translate

import (
	"fmt"
	"regexp"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// grpcRules translates a GRPCRoute's rules. A gRPC call is an HTTP/2 POST
// to /<service>/<method>, so method matches become path matches and every
// backend is spoken to over HTTP/2. gw and access are as for httpRules.
func (t *translator) grpcRules(r *gwv1.GRPCRoute, route *proxycfg.Route, gw *gatewayInfo, access *accessInfo) ruleSet {
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
		policy := t.ruleAccess(kindGRPCRoute, r.Namespace, r.Name, out.Name, access)
		rs.protectedBy(policy)
		for _, m := range src.Matches {
			dm := proxycfg.Match{Path: everyPath()}
			if m.Method != nil {
				if p, precedence := grpcPath(m.Method); p != nil {
					dm.Path, dm.Precedence = p, precedence
				}
			}
			for _, h := range m.Headers {
				vm := proxycfg.ValueMatch{Type: proxycfg.MatchExact, Name: string(h.Name), Value: h.Value}
				if h.Type != nil {
					vm.Type = string(*h.Type)
				}
				dm.Headers = append(dm.Headers, vm)
			}
			out.Matches = append(out.Matches, dm)
		}
		if len(out.Matches) == 0 {
			out.Matches = []proxycfg.Match{{Path: everyPath()}}
		}
		out.Filters = t.grpcFilters(src.Filters, r.Namespace, gw, &rs, &out)
		for j := range src.BackendRefs {
			br := &src.BackendRefs[j]
			b := t.backend(kindGRPCRoute, r.Namespace, &br.BackendRef, true, gw, &rs)
			var failed proxycfg.Rule
			b.Filters = t.grpcFilters(br.Filters, r.Namespace, gw, &rs, &failed)
			if failed.FailStatus != 0 {
				b.Status = failed.FailStatus
			}
			out.Backends = append(out.Backends, b)
		}
		//lint:ignore SA1019 route-inline session persistence is deprecated (GEP-4894) but still in the API: served until it is removed
		if sp := src.SessionPersistence; sp != nil {
			s, err := sessionPersistence(ruleID(kindGRPCRoute, r.Namespace, r.Name, i, src.Name), sp)
			if err != nil {
				rs.dropped = append(rs.dropped, fmt.Sprintf("rule %d: %v", i, err))
				continue
			}
			out.SessionPersistence = s
		}
		policy.protect(&out)
		rs.keep(t.cache, newRuleKey(r, i, &out), route, i, out)
	}
	return rs
}

// grpcPath maps a method match to a path match, and the precedence that
// orders it as the GRPCRoute spec does: more characters of a matched
// service first, then of a matched method.
//
//   - service and method, Exact: Exact "/svc/method"; nothing can beat it
//     on its path.
//   - service only, or method only: an anchored expression over both
//     segments, ranked by (service length, method length). An expression,
//     not a "/svc" prefix, because the router ranks expressions above
//     prefixes: a method-only match must not outrank a service-only one.
//   - RegularExpression: the expression over both segments, ranked below
//     literal names (how many characters it matches depends on the call).
func grpcPath(m *gwv1.GRPCMethodMatch) (*proxycfg.PathMatch, int) {
	svc, method := "", ""
	if m.Service != nil {
		svc = *m.Service
	}
	if m.Method != nil {
		method = *m.Method
	}
	const anySegment = "[^/]+"
	if m.Type != nil && *m.Type == gwv1.GRPCMethodMatchRegularExpression {
		if svc == "" {
			svc = anySegment
		}
		if method == "" {
			method = anySegment
		}
		return &proxycfg.PathMatch{Type: proxycfg.PathRegex, Value: "/(?:" + svc + ")/(?:" + method + ")"}, 0
	}
	switch {
	case svc != "" && method != "":
		return &proxycfg.PathMatch{Type: proxycfg.PathExact, Value: "/" + svc + "/" + method}, 0
	case svc != "":
		return &proxycfg.PathMatch{Type: proxycfg.PathRegex, Value: "/" + regexp.QuoteMeta(svc) + "/" + anySegment}, grpcRank(svc, "")
	case method != "":
		return &proxycfg.PathMatch{Type: proxycfg.PathRegex, Value: "/" + anySegment + "/" + regexp.QuoteMeta(method)}, grpcRank("", method)
	}
	return nil, 0
}

// grpcRank orders literal service and method matches: service length
// first, method length second (names are at most 1024 bytes by the CRD),
// all above the 0 of regular expressions.
func grpcRank(svc, method string) int {
	return (min(len(svc), 4095)<<12 | min(len(method), 4095)) + 1
}

// grpcFilters translates GRPCRoute filters. Their types are a subset of
// HTTPRoute's, spelled the same and built from the same parts, so they go
// through httpFilters, with gRPC's mirror protocol.
func (t *translator) grpcFilters(fs []gwv1.GRPCRouteFilter, ns string, gw *gatewayInfo, rs *ruleSet, rule *proxycfg.Rule) []proxycfg.Filter {
	if len(fs) == 0 {
		return nil
	}
	hfs := make([]gwv1.HTTPRouteFilter, len(fs))
	for i, f := range fs {
		hfs[i] = gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterType(f.Type), RequestHeaderModifier: f.RequestHeaderModifier,
			ResponseHeaderModifier: f.ResponseHeaderModifier, RequestMirror: f.RequestMirror, ExtensionRef: f.ExtensionRef}
	}
	return t.httpFilters(kindGRPCRoute, hfs, ns, gw, rs, rule)
}
