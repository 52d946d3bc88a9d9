// This file attaches AccessPolicies to listeners, routes and rules.

package translate

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// AccessPolicies put route rules behind Cloudflare Access. This file
// decides which policy protects each rule; accessstatus.go reports it on
// the policies and their targets.
//
//   - A policy names targets in its namespace: a Gateway (sectionName:
//     one of the Gateway's own listeners), an HTTPRoute, a GRPCRoute, a
//     TCPRoute or a TLSRoute (sectionName: the name of one of its rules;
//     on stream routes the tunnel checks tokens: streamaccess.go).
//   - On one target the oldest policy applies (accessWinner); the others
//     are Conflicted there.
//   - A rule served through a listener takes, whole, the policy of the
//     most specific target: its rule, else its route, else the listener,
//     else the listener's Gateway (GEP-713's "atomic defaults": the more
//     specific policy replaces the less specific, no merging). The less
//     specific are overridden on that rule.
//   - A policy the proxy could not apply (accessInfo.invalid) still claims
//     its rules, which answer 500: a request meant to be checked is never
//     let through unchecked.
//   - A protected rule gets Rule.Access; the config carries the keys of
//     every team a rule uses (Input.AccessKeys).
//   - A policy with spec.application asks for an Access application over
//     the public hostnames of the rules it protects (Output.AccessApps),
//     which the Cloudflare sync makes per tunnel; the tags it reports
//     (TunnelState.AccessApps) join the policy's audiences. Until one is
//     known its rules answer 503: no token could pass.

// accessTarget is what a targetRef names: kind, namespace, name, and the
// section ("" for the whole object).
type accessTarget struct{ kind, namespace, name, section string }

// accessInfo is one AccessPolicy: what it asks of a rule, or why it
// cannot be applied.
type accessInfo struct {
	obj *v1alpha1.AccessPolicy
	// access is set on the rules the policy protects; nil when invalid,
	// or while its application has no audience tag yet (appPending).
	access     *proxycfg.Access
	invalid    string
	appPending bool
	// uses are its ancestors' outcomes, made by accessStatuses.
	uses []*accessUse
	// appHosts are the public hostnames of the rules it protects, for
	// its application (spec.application), made by countProtections.
	appHosts []string
}

func (ai *accessInfo) name() string { return ai.obj.Namespace + "/" + ai.obj.Name }

// accessPolicies indexes every AccessPolicy by the targets it names,
// oldest first on each. It runs before routes are translated.
func (t *translator) accessPolicies() {
	if len(t.in.AccessPolicies) == 0 {
		return
	}
	ps := slices.Clone(t.in.AccessPolicies)
	slices.SortFunc(ps, func(a, b *v1alpha1.AccessPolicy) int { return compareAge(&a.ObjectMeta, &b.ObjectMeta) })
	t.accessByTarget = map[accessTarget][]*accessInfo{}
	for _, p := range ps {
		ai := newAccessInfo(p, t.applicationAUDs(p))
		t.accessList = append(t.accessList, ai)
		for _, k := range accessTargets(p) {
			if !slices.Contains(t.accessByTarget[k], ai) {
				t.accessByTarget[k] = append(t.accessByTarget[k], ai)
			}
		}
	}
}

// accessTargets are the targets a policy names that it can have: of the
// Gateway API's group (the others are reported by accessStatuses).
func accessTargets(p *v1alpha1.AccessPolicy) []accessTarget {
	out := make([]accessTarget, 0, len(p.Spec.TargetRefs))
	for _, tr := range p.Spec.TargetRefs {
		if string(tr.Group) == groupGateway {
			out = append(out, accessTarget{string(tr.Kind), p.Namespace, string(tr.Name), sectionOf(tr.SectionName)})
		}
	}
	return out
}

// newAccessInfo checks a policy the way the proxy will check the rules it
// protects, so a problem shows once, on the policy. appAUDs are the
// audience tags of its applications (spec.application), as the
// Cloudflare sync reported them.
func newAccessInfo(p *v1alpha1.AccessPolicy, appAUDs []string) *accessInfo {
	ai := &accessInfo{obj: p}
	s := &p.Spec
	h := s.Headers()
	a := &proxycfg.Access{Team: s.TeamDomain, Audiences: s.Audiences,
		EmailHeader: h.Email, SubjectHeader: h.Subject, GroupsHeader: h.Groups, ServiceTokenHeader: h.ServiceToken}
	if len(appAUDs) > 0 {
		a.Audiences = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(s.Audiences), appAUDs...))))
	}
	if r := s.Require; r != nil {
		a.Emails, a.EmailDomains, a.Groups, a.ServiceTokens = r.Emails, r.EmailDomains, r.Groups, r.ServiceTokens
	}
	// A policy waiting for its application's tag is checked as if it had
	// one, so that whatever else is wrong shows now.
	pending := s.Application != nil && len(a.Audiences) == 0
	checked := *a
	if pending {
		checked.Audiences = []string{"pending"}
	}
	var errs []error
	if err := cfaccess.CheckTeamDomain(s.TeamDomain); err != nil {
		errs = append(errs, errors.New("teamDomain: "+err.Error()))
	}
	if err := compiled.ValidateAccess(&checked); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		ai.invalid = strings.ReplaceAll(err.Error(), "\n", "; ")
		return ai
	}
	if pending {
		ai.appPending = true
		return ai
	}
	ai.access = a
	return ai
}

// applicationAUDs are the audience tags the Cloudflare sync reported for
// the applications of a policy with spec.application (one per tunnel
// serving its hostnames), sorted.
func (t *translator) applicationAUDs(p *v1alpha1.AccessPolicy) []string {
	if p.Spec.Application == nil {
		return nil
	}
	key := p.Namespace + "/" + p.Name
	var out []string
	for _, ts := range t.in.Tunnels {
		if st, ok := ts.AccessApps[key]; ok && st.AUD != "" && !slices.Contains(out, st.AUD) {
			out = append(out, st.AUD)
		}
	}
	slices.Sort(out)
	return out
}

// accessWinner is the policy that applies on a target: the oldest naming
// it, or nil.
func (t *translator) accessWinner(k accessTarget) *accessInfo {
	if list := t.accessByTarget[k]; len(list) > 0 {
		return list[0]
	}
	return nil
}

// gatewayTarget is a Gateway as a target: whole (section ""), or one of
// its listeners.
func gatewayTarget(gw *gatewayInfo, section string) accessTarget {
	return accessTarget{"Gateway", gw.key.Namespace, gw.key.Name, section}
}

// listenerLevels are the policies naming a listener (a Gateway's own
// listener: a ListenerSet's cannot be named) and naming its Gateway.
func (t *translator) listenerLevels(li *listenerInfo) (listener, gateway *accessInfo) {
	if t.accessByTarget == nil || li.gw == nil {
		return nil, nil
	}
	if li.set == nil {
		listener = t.accessWinner(gatewayTarget(li.gw, li.name))
	}
	return listener, t.accessWinner(gatewayTarget(li.gw, ""))
}

// listenerAccess is the policy of a listener's requests, unless their
// route or rule has its own: the listener's, else its Gateway's.
func (t *translator) listenerAccess(li *listenerInfo) *accessInfo {
	listener, gateway := t.listenerLevels(li)
	return cmp.Or(listener, gateway)
}

// routeLevels are the policies naming a route's rule named rule (none
// for an unnamed rule) and naming the whole route.
func (t *translator) routeLevels(kind, ns, name, rule string) (ruleLevel, route *accessInfo) {
	if t.accessByTarget == nil {
		return nil, nil
	}
	if rule != "" {
		ruleLevel = t.accessWinner(accessTarget{kind, ns, name, rule})
	}
	return ruleLevel, t.accessWinner(accessTarget{kind, ns, name, ""})
}

// routeAccess is the policy naming a whole route, or nil.
func (t *translator) routeAccess(kind, ns, name string) *accessInfo {
	_, route := t.routeLevels(kind, ns, name, "")
	return route
}

// ruleAccess is the policy protecting the rule named rule (maybe "") of
// a route, served where listener's policy is scope.
func (t *translator) ruleAccess(kind, ns, name, rule string, scope *accessInfo) *accessInfo {
	ruleLevel, route := t.routeLevels(kind, ns, name, rule)
	return cmp.Or(ruleLevel, route, scope)
}

// protect puts a rule behind the policy: its Access, or, for a policy
// that cannot be applied, a 500 for every request.
func (ai *accessInfo) protect(r *proxycfg.Rule) {
	switch {
	case ai == nil:
	case ai.appPending:
		r.FailStatus = http.StatusServiceUnavailable // no token can pass before its application exists
	case ai.access == nil:
		r.FailStatus = failClosed
	default:
		r.Access = ai.access
	}
}

// teamDomains are the teams the routes' rules use, sorted, once each.
func teamDomains(routes []proxycfg.Route) []string {
	var out []string
	for i := range routes {
		for j := range routes[i].Rules {
			if a := routes[i].Rules[j].Access; a != nil && !slices.Contains(out, a.Team) {
				out = append(out, a.Team)
			}
		}
	}
	slices.Sort(out)
	return out
}

// accessTeams lists the teams the routes' rules use, in domain order,
// with their keys ("" when none are known: the proxies then refuse the
// team's requests, or keep the keys they had).
func accessTeams(routes []proxycfg.Route, keys map[string]*AccessKeys) []proxycfg.AccessTeam {
	var out []proxycfg.AccessTeam
	for _, d := range teamDomains(routes) {
		team := proxycfg.AccessTeam{Domain: d}
		if k := keys[d]; k != nil {
			team.Keys = k.Doc
		}
		out = append(out, team)
	}
	return out
}

// AccessKeys are one Access team's signing keys as the controller last
// fetched them (ctrl/accesskeys).
type AccessKeys struct {
	// Doc is the team's certs document as last fetched with usable keys,
	// "" when no fetch has had any.
	Doc string
	// Problem is why the last fetch failed, "" when it did not.
	Problem string
}

func sectionOf(s *gwv1.SectionName) string {
	if s == nil {
		return ""
	}
	return string(*s)
}
