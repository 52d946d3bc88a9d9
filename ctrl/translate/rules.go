// This file translates the filters HTTPRoute and GRPCRoute share, and
// drops rules the proxy refuses.

package translate

import (
	"errors"
	"fmt"
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// ruleSet is the translation of one route's rules, and what went wrong on
// the way: the first unresolved reference (ResolvedRefs), and the rules
// dropped because the proxy could not serve them (PartiallyInvalid).
type ruleSet struct {
	rules   []proxycfg.Rule
	refs    *refProblem
	dropped []string
	// unsupported explains a filter type tunnelgate does not implement:
	// the route is not Accepted, and its rule fails closed meanwhile.
	unsupported string
	// protectors are the AccessPolicies of its rules, kept or dropped.
	protectors []*accessInfo
}

// protectedBy records a rule's AccessPolicy, if it has one.
func (rs *ruleSet) protectedBy(ai *accessInfo) {
	if ai != nil && !slices.Contains(rs.protectors, ai) {
		rs.protectors = append(rs.protectors, ai)
	}
}

// addDropped adds another group's dropped rules (their Access can make
// them differ).
func (rs *ruleSet) addDropped(dropped []string) {
	for _, d := range dropped {
		if !slices.Contains(rs.dropped, d) {
			rs.dropped = append(rs.dropped, d)
		}
	}
}

func (rs *ruleSet) refProblem(p *refProblem) {
	if rs.refs == nil && p != nil && p.reason != "" {
		rs.refs = p
	}
}

// keep validates a translated rule the way the proxy will and keeps it, or
// drops it with the proxy's reason.
func (rs *ruleSet) keep(c *Cache, key ruleKey, route *proxycfg.Route, i int, r proxycfg.Rule) {
	err := c.validated(key, func() error {
		// Hostnames are checked on their own (validHostname); the rule is
		// judged without them, so the result depends on the rule alone.
		tmp := proxycfg.Route{Kind: route.Kind, Namespace: route.Namespace, Name: route.Name, Rules: []proxycfg.Rule{r}}
		return compiled.ValidateRule(&tmp, 0)
	})
	if err != nil {
		// The status is on the route, and names the rule by its index
		// there: it says what is wrong and where in the rule.
		msg := err.Error()
		if re, ok := errors.AsType[*compiled.RuleError](err); ok {
			msg = re.Detail()
		}
		rs.dropped = append(rs.dropped, fmt.Sprintf("rule %d: %s", i, msg))
		return
	}
	rs.rules = append(rs.rules, r)
}

// failClosed makes a rule answer 500: the spec's answer for a rule whose
// filters or backends tunnelgate cannot honour, so that a request never
// skips a filter it was meant to pass through.
const failClosed = 500

func headerModifier(m *gwv1.HTTPHeaderFilter) *proxycfg.HeaderModifier {
	out := &proxycfg.HeaderModifier{Remove: m.Remove}
	for _, h := range m.Set {
		out.Set = append(out.Set, proxycfg.Header{Name: string(h.Name), Value: h.Value})
	}
	for _, h := range m.Add {
		out.Add = append(out.Add, proxycfg.Header{Name: string(h.Name), Value: h.Value})
	}
	return out
}

func pathModifier(m *gwv1.HTTPPathModifier) *proxycfg.PathModifier {
	if m == nil {
		return nil
	}
	out := &proxycfg.PathModifier{Type: string(m.Type)}
	if m.ReplaceFullPath != nil {
		out.ReplaceFullPath = *m.ReplaceFullPath
	}
	if m.ReplacePrefixMatch != nil {
		out.ReplacePrefixMatch = *m.ReplacePrefixMatch
	}
	return out
}

func redirect(f *gwv1.HTTPRequestRedirectFilter) *proxycfg.Redirect {
	out := &proxycfg.Redirect{Path: pathModifier(f.Path)}
	if f.Scheme != nil {
		out.Scheme = *f.Scheme
	}
	if f.Hostname != nil {
		out.Hostname = string(*f.Hostname)
	}
	if f.Port != nil {
		out.Port = int(*f.Port)
	}
	out.StatusCode = 302
	if f.StatusCode != nil {
		out.StatusCode = *f.StatusCode
	}
	return out
}

func rewrite(f *gwv1.HTTPURLRewriteFilter) *proxycfg.Rewrite {
	out := &proxycfg.Rewrite{Path: pathModifier(f.Path)}
	if f.Hostname != nil {
		out.Hostname = string(*f.Hostname)
	}
	return out
}

func cors(f *gwv1.HTTPCORSFilter) *proxycfg.CORS {
	out := &proxycfg.CORS{MaxAge: int(f.MaxAge)}
	if out.MaxAge == 0 { // unset: a maxAge of 0 fails the CRD's minimum of 1
		out.MaxAge = 5
	}
	if f.AllowCredentials != nil {
		out.AllowCredentials = *f.AllowCredentials
	}
	for _, o := range f.AllowOrigins {
		out.AllowOrigins = append(out.AllowOrigins, string(o))
	}
	for _, m := range f.AllowMethods {
		out.AllowMethods = append(out.AllowMethods, string(m))
	}
	for _, h := range f.AllowHeaders {
		out.AllowHeaders = append(out.AllowHeaders, string(h))
	}
	for _, h := range f.ExposeHeaders {
		out.ExposeHeaders = append(out.ExposeHeaders, string(h))
	}
	return out
}

// mirror resolves a RequestMirror filter's backend. A mirror that cannot
// be resolved is left out (the primary request is unaffected) and reported.
func (t *translator) mirror(routeKind, ns string, f *gwv1.HTTPRequestMirrorFilter, grpc bool, gw *gatewayInfo, rs *ruleSet) (proxycfg.Filter, bool) {
	name, p := t.backendRef(routeKind, ns, &f.BackendRef, grpc, gw)
	if p != nil {
		rs.refProblem(p)
		return proxycfg.Filter{}, false
	}
	m := &proxycfg.Mirror{Cluster: name}
	if f.Percent != nil {
		pc := int(*f.Percent)
		m.Percent = &pc
	}
	if f.Fraction != nil {
		fr := &proxycfg.Fraction{Numerator: int(f.Fraction.Numerator), Denominator: 100}
		if f.Fraction.Denominator != nil {
			fr.Denominator = int(*f.Fraction.Denominator)
		}
		m.Fraction = fr
	}
	return proxycfg.Filter{Type: proxycfg.FilterRequestMirror, RequestMirror: m}, true
}

// unsupportedFilter records a filter tunnelgate cannot run. Either way
// the rule fails closed (500), so no request skips a filter meant for it:
// an ExtensionRef is a reference tunnelgate cannot resolve (ResolvedRefs,
// InvalidKind, as the spec asks); another type is a value it does not
// support (Accepted=False, UnsupportedValue).
func (rs *ruleSet) unsupportedFilter(typ string, ext *gwv1.LocalObjectReference, rule *proxycfg.Rule) {
	rule.FailStatus = failClosed
	if ext != nil {
		rs.refProblem(&refProblem{string(gwv1.RouteReasonInvalidKind),
			fmt.Sprintf("filter ExtensionRef %s/%s %s is not supported; the rule answers 500", ext.Group, ext.Kind, ext.Name)})
		return
	}
	if rs.unsupported == "" {
		rs.unsupported = fmt.Sprintf("filter type %s is not supported; until it is removed, the rule answers 500", typ)
	}
}

// backendRefs resolves a rule's weighted backends. An unusable backend
// keeps its weight and answers 500 for its share, as the spec requires.
func (t *translator) backend(routeKind, ns string, ref *gwv1.BackendRef, grpc bool, gw *gatewayInfo, rs *ruleSet) proxycfg.BackendRef {
	w := 1
	if ref.Weight != nil {
		w = int(*ref.Weight)
	}
	name, p := t.backendRef(routeKind, ns, &ref.BackendObjectReference, grpc, gw)
	if p != nil {
		rs.refProblem(p)
		return proxycfg.BackendRef{Weight: w, Status: failClosed}
	}
	return proxycfg.BackendRef{Cluster: name, Weight: w}
}
