// This file writes AccessPolicies' statuses and the conditions they put on
// what they affect.

package translate

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// How AccessPolicies are reported (access.go decides them).
//
// On a policy, one ancestor status per Gateway whose requests it may
// protect: the Gateway it targets (with the listener, for a sectionName),
// or the Gateways that accept the route it targets. A target that cannot
// be found is an ancestor of its own, the target itself; one of another
// controller is none (othersTarget). Each carries
//
//   - Accepted: True when it applies on some target there; False and
//     Conflicted when an older policy holds every target there; False and
//     TargetNotFound; False and Invalid when the proxies could not apply
//     it (its rules answer 500 meanwhile).
//   - Programmed (when Accepted): Programmed when it protects rules there
//     and is overridden on none, PartiallyProgrammed when more specific
//     policies take some of its rules, False and Overridden when they take
//     them all.
//   - KeysReady (when Accepted): whether the team's signing keys are
//     known. Without them the proxies refuse every request of its rules.
//   - ApplicationReady (when Accepted, for spec.application): whether
//     the Access application over the Gateway's protected hostnames
//     exists, in the account of the tunnel serving the Gateway.
//
// On the targets, the condition ConditionAccessPolicyAffected: on a
// Gateway that a policy applies to whole, on a listener one applies to,
// and on each route parent status whose rules one protects.

// ConditionAccessPolicyAffected marks objects an AccessPolicy affects, as
// GEP-713 names it: <domain>/<policy kind>Affected.
const ConditionAccessPolicyAffected = "tunnelgate.dev/AccessPolicyAffected"

// AccessConditionKeysReady is an AccessPolicy ancestor's condition: are
// the team's signing keys known?
const AccessConditionKeysReady = "KeysReady"

// GEP-713's Programmed condition of a policy, which the Gateway API
// module of this version does not define yet.
const (
	policyConditionProgrammed       = "Programmed"
	policyReasonProgrammed          = "Programmed"
	policyReasonPartiallyProgrammed = "PartiallyProgrammed"
	policyReasonOverridden          = "Overridden"
)

const (
	reasonAccessProtected = "Protected"
	reasonKeysFetched     = "KeysFetched"
	reasonKeysUnavailable = "KeysUnavailable"
)

// AccessConditionApplicationReady is the condition, on an AccessPolicy
// ancestor, of a policy with spec.application: does the Access
// application covering the Gateway's hostnames exist?
const AccessConditionApplicationReady = "ApplicationReady"

const (
	reasonApplicationProgrammed = "ApplicationProgrammed"
	reasonApplicationPending    = "Pending"
	reasonApplicationFailed     = "ApplicationFailed"
	reasonApplicationNoTunnel   = "NoTunnel"
)

// accessUse is what a policy does under one ancestor.
type accessUse struct {
	ref gwv1.ParentReference
	// applies and lost are the targets it holds there and those an older
	// policy holds (target → that policy); notFound explains targets that
	// cannot be found.
	applies  []string
	lost     map[string]string
	notFound []string
	// rules it protects, and those more specific policies take from it.
	rules, overridden map[string]bool
	overriders        []string
	// streams: some rules it protects are stream routes' (streamaccess.go).
	streams bool
}

// use returns the policy's record for an ancestor, made on first use.
func (ai *accessInfo) use(ref gwv1.ParentReference) *accessUse {
	for _, u := range ai.uses {
		if SameParentRef(&u.ref, &ref) {
			return u
		}
	}
	u := &accessUse{ref: ref, lost: map[string]string{}, rules: map[string]bool{}, overridden: map[string]bool{}}
	ai.uses = append(ai.uses, u)
	return u
}

func gatewayAncestor(gi *gatewayInfo, section string) gwv1.ParentReference {
	ref := gwv1.ParentReference{Group: groupPtr(groupGateway), Kind: kindPtr("Gateway"),
		Namespace: nsPtr(gi.key.Namespace), Name: gwv1.ObjectName(gi.key.Name)}
	if section != "" {
		s := gwv1.SectionName(section)
		ref.SectionName = &s
	}
	return ref
}

// targetAncestor is a target that cannot be found, as its own ancestor.
func targetAncestor(ns string, tr *gwv1.LocalPolicyTargetReferenceWithSectionName) gwv1.ParentReference {
	return gwv1.ParentReference{Group: groupPtr(string(tr.Group)), Kind: kindPtr(string(tr.Kind)),
		Namespace: nsPtr(ns), Name: tr.Name, SectionName: tr.SectionName}
}

// ruleNames are a route's rules' names, "" for a rule without one.
func ruleNames(p pending) []string {
	var out []string
	switch {
	case p.tcp != nil:
		for i := range p.tcp.Spec.Rules {
			out = append(out, sectionOf(p.tcp.Spec.Rules[i].Name))
		}
	case p.tls != nil:
		for i := range p.tls.Spec.Rules {
			out = append(out, sectionOf(p.tls.Spec.Rules[i].Name))
		}
	case p.http != nil:
		for i := range p.http.Spec.Rules {
			out = append(out, sectionOf(p.http.Spec.Rules[i].Name))
		}
	default:
		for i := range p.grpc.Spec.Rules {
			out = append(out, sectionOf(p.grpc.Spec.Rules[i].Name))
		}
	}
	return out
}

// eachProtection calls fn for each rule of a route on each listener it is
// served on, with the candidate policies from the most specific: the
// rule's, the route's, the listener's, the Gateway's.
func (t *translator) eachProtection(r *routeInfo, names []string, fn func(pi *parentInfo, a *attachment, rule int, chain [4]*accessInfo)) {
	for _, pi := range r.parents {
		if !pi.accepted() {
			continue
		}
		for _, a := range pi.attachments {
			if a.lostTo != "" || a.shadowedBy != "" {
				continue
			}
			listener, gateway := t.listenerLevels(a.listener)
			for i, rn := range names {
				rule, route := t.routeLevels(r.kind, r.meta.Namespace, r.meta.Name, rn)
				fn(pi, a, i, [4]*accessInfo{rule, route, listener, gateway})
			}
		}
	}
}

func effective(chain [4]*accessInfo) *accessInfo { return cmp.Or(chain[:]...) }

// protectedMessage names the policies protecting a route's rules.
func protectedMessage(ps []*accessInfo) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name()
	}
	slices.Sort(names)
	return "its rules are behind Cloudflare Access, by AccessPolicy " + listLimited(names)
}

// accessGatewayConditions marks a Gateway, and its own listeners, that a
// policy applies to.
func (t *translator) accessGatewayConditions(gi *gatewayInfo) {
	if t.accessByTarget == nil {
		return
	}
	if w := t.accessWinner(gatewayTarget(gi, "")); w != nil {
		gi.conds.set(ConditionAccessPolicyAffected, true, reasonAccessProtected,
			fmt.Sprintf("AccessPolicy %s applies to its listeners' routes, but where a more specific one applies", w.name()))
	}
	for _, li := range gi.own {
		if w, _ := t.listenerLevels(li); w != nil {
			li.conds.set(ConditionAccessPolicyAffected, true, reasonAccessProtected,
				fmt.Sprintf("AccessPolicy %s applies to the listener's routes, but where a more specific one applies", w.name()))
		}
	}
}

// accessStatuses writes every AccessPolicy's ancestor statuses.
func (t *translator) accessStatuses() {
	if len(t.accessList) == 0 {
		return
	}
	routes := map[accessTarget]pending{}
	for _, p := range t.routeList {
		routes[accessTarget{p.info.kind, p.info.meta.Namespace, p.info.meta.Name, ""}] = p
	}
	for _, ai := range t.accessList {
		for i := range ai.obj.Spec.TargetRefs {
			t.resolveAccessTarget(ai, &ai.obj.Spec.TargetRefs[i], routes)
		}
	}
	t.countProtections()
	for _, ai := range t.accessList {
		t.out.AccessPolicies[nn(ai.obj.Namespace, ai.obj.Name)] = t.accessAncestors(ai)
		t.accessApp(ai)
	}
}

// accessApp asks for the application of a policy with spec.application
// that protects rules of public hostnames.
func (t *translator) accessApp(ai *accessInfo) {
	app, s := ai.obj.Spec.Application, &ai.obj.Spec
	if app == nil || ai.invalid != "" || len(ai.appHosts) == 0 {
		return
	}
	a := AccessApp{Policy: ai.name(), Name: ai.obj.AppName(), SessionDuration: app.SessionDuration,
		Hostnames: slices.Compact(slices.Sorted(slices.Values(ai.appHosts)))}
	if r := s.Require; r != nil {
		a.Emails, a.EmailDomains, a.ServiceTokens = slices.Sorted(slices.Values(r.Emails)), slices.Sorted(slices.Values(r.EmailDomains)), len(r.ServiceTokens) > 0
	}
	t.out.AccessApps = append(t.out.AccessApps, a)
}

// resolveAccessTarget records, under the target's ancestors, whether the
// policy holds the target or why it does not.
func (t *translator) resolveAccessTarget(ai *accessInfo, tr *gwv1.LocalPolicyTargetReferenceWithSectionName, routes map[accessTarget]pending) {
	ns, section := ai.obj.Namespace, sectionOf(tr.SectionName)
	k := accessTarget{string(tr.Kind), ns, string(tr.Name), section}
	desc := fmt.Sprintf("%s %s", tr.Kind, tr.Name)
	if section != "" {
		desc += " " + section
	}
	hold := func(ref gwv1.ParentReference) {
		u := ai.use(ref)
		if w := t.accessWinner(k); w == ai {
			u.applies = append(u.applies, desc)
		} else {
			u.lost[desc] = w.name()
		}
	}
	notFound := func(msg string) {
		u := ai.use(targetAncestor(ns, tr))
		u.notFound = append(u.notFound, msg)
	}
	if string(tr.Group) != groupGateway {
		notFound(fmt.Sprintf("%s: a target is a Gateway, an HTTPRoute, a GRPCRoute, a TCPRoute or a TLSRoute of group %s", desc, groupGateway))
		return
	}
	if t.othersTarget(ns, tr, routes) {
		return // another controller's: its status there is that controller's
	}
	switch k.kind {
	case "Gateway":
		if gi, _, missing := t.policyGateway(ns, k.name, section); missing != "" {
			notFound(missing)
		} else {
			hold(gatewayAncestor(gi, section))
		}
	case kindHTTPRoute, kindGRPCRoute, kindTCPRoute, kindTLSRoute:
		p, ok := routes[accessTarget{k.kind, ns, k.name, ""}]
		if !ok {
			notFound(fmt.Sprintf("%s %s/%s not found", k.kind, ns, k.name))
			return
		}
		if section != "" && !slices.Contains(ruleNames(p), section) {
			notFound(fmt.Sprintf("%s %s/%s has no rule named %s", k.kind, ns, k.name, section))
			return
		}
		var gws []*gatewayInfo
		for _, pi := range p.info.parents {
			if pi.accepted() && !slices.Contains(gws, pi.gw) {
				gws = append(gws, pi.gw)
			}
		}
		if len(gws) == 0 {
			notFound(fmt.Sprintf("%s %s/%s is not accepted by a Gateway of this controller's classes", k.kind, ns, k.name))
		}
		for _, gi := range gws {
			hold(gatewayAncestor(gi, ""))
		}
	default:
		notFound(fmt.Sprintf("%s: a target is a Gateway, an HTTPRoute, a GRPCRoute, a TCPRoute or a TLSRoute", desc))
	}
}

// countProtections counts, for every policy under each ancestor, the
// rules it protects and those a more specific policy takes from it.
func (t *translator) countProtections() {
	for _, p := range t.routeList {
		if len(p.info.parents) == 0 {
			continue
		}
		names := ruleNames(p)
		routeKey := p.info.kind + " " + p.info.meta.Namespace + "/" + p.info.meta.Name + " rule "
		t.eachProtection(p.info, names, func(pi *parentInfo, a *attachment, rule int, chain [4]*accessInfo) {
			w := effective(chain)
			if w == nil {
				return
			}
			ruleKey := routeKey + strconv.Itoa(rule)
			// The ancestor each level reports under: the Gateway, but for
			// a listener's policy, the Gateway's listener.
			ancestor := func(level int) gwv1.ParentReference {
				if level == 2 {
					return gatewayAncestor(pi.gw, a.listener.name)
				}
				return gatewayAncestor(pi.gw, "")
			}
			if w.obj.Spec.Application != nil {
				w.appHosts = append(w.appHosts, a.held()...)
			}
			for level, c := range chain {
				switch {
				case c == nil:
				case c == w:
					u := c.use(ancestor(level))
					u.rules[ruleKey] = true
					u.streams = u.streams || streamKind(p.info.kind)
				default:
					u := c.use(ancestor(level))
					u.overridden[ruleKey] = true
					if !slices.Contains(u.overriders, w.name()) {
						u.overriders = append(u.overriders, w.name())
					}
				}
			}
		})
	}
}

// accessAncestors are a policy's ancestor statuses (policyAncestors).
func (t *translator) accessAncestors(ai *accessInfo) []gwv1.PolicyAncestorStatus {
	return policyAncestors(t, "AccessPolicy", &ai.obj.ObjectMeta, ai.obj.Status.Ancestors, ai.uses,
		func(u *accessUse) *gwv1.ParentReference { return &u.ref },
		func(u *accessUse, c *conds) { t.accessConditions(ai, u, c) })
}

// accessConditions are one ancestor's conditions (see the top of the
// file).
func (t *translator) accessConditions(ai *accessInfo, u *accessUse, c *conds) {
	accepted := string(gwv1.PolicyConditionAccepted)
	switch {
	case len(u.applies) == 0 && len(u.lost) > 0:
		c.set(accepted, false, string(gwv1.PolicyReasonConflicted), lostMessage(u.lost))
		return
	case len(u.applies) == 0:
		c.set(accepted, false, string(gwv1.PolicyReasonTargetNotFound), joinLimited(u.notFound))
		return
	case ai.invalid != "":
		c.set(accepted, false, string(gwv1.PolicyReasonInvalid), ai.invalid+"; its rules answer 500 until it is fixed"+streamsWithheld(u))
		return
	}
	msg := "applies to " + joinLimited(u.applies)
	if len(u.lost) > 0 {
		msg += "; not to " + lostMessage(u.lost)
	}
	c.set(accepted, true, string(gwv1.PolicyReasonAccepted), msg)

	programmed := policyConditionProgrammed
	n, o := len(u.rules), len(u.overridden)
	slices.Sort(u.overriders)
	by := listLimited(u.overriders)
	switch {
	case n == 0 && o > 0:
		c.set(programmed, false, policyReasonOverridden, "more specific policies take every rule it would protect: "+by)
	case o > 0:
		c.set(programmed, true, policyReasonPartiallyProgrammed,
			fmt.Sprintf("protects %s; more specific policies take %s: %s", plural(n, "rule"), plural(o, "other"), by))
	case n == 0:
		c.set(programmed, true, policyReasonProgrammed, "protects every rule served here; none is yet")
	default:
		c.set(programmed, true, policyReasonProgrammed, "protects "+plural(n, "rule"))
	}

	if ai.obj.Spec.Application != nil {
		t.applicationCondition(ai, u, c)
	}
	if u.streams {
		streamEnforcement(ai, c)
	}

	keys := t.in.AccessKeys[ai.obj.Spec.TeamDomain]
	switch {
	case keys == nil:
		c.set(AccessConditionKeysReady, false, reasonKeysUnavailable,
			"the team's signing keys are not fetched yet; until they are, its rules refuse every request (403)")
	case keys.Doc == "":
		c.set(AccessConditionKeysReady, false, reasonKeysUnavailable,
			"the team's signing keys cannot be fetched: "+keys.Problem+"; until they are, its rules refuse every request (403)")
	case keys.Problem != "":
		c.set(AccessConditionKeysReady, true, reasonKeysFetched,
			"the team's signing keys are known; the last refresh failed ("+keys.Problem+"), so the proxies keep the keys fetched before")
	default:
		c.set(AccessConditionKeysReady, true, reasonKeysFetched, "the team's signing keys are known")
	}
}

func lostMessage(lost map[string]string) string {
	var parts []string
	for target, winner := range lost {
		parts = append(parts, fmt.Sprintf("%s, which the older AccessPolicy %s holds", target, winner))
	}
	slices.Sort(parts)
	return joinLimited(parts)
}

// listLimited joins names with commas, at most five and a count.
func listLimited(names []string) string { return joinFirst(names, ", ", " and ") }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func refString(r *gwv1.ParentReference) string {
	s := ""
	if r.Kind != nil {
		s = string(*r.Kind)
	}
	if r.Namespace != nil {
		s += " " + string(*r.Namespace)
	}
	s += "/" + string(r.Name)
	if r.SectionName != nil {
		s += " " + string(*r.SectionName)
	}
	return s
}

// applicationCondition is ApplicationReady under one ancestor: the state
// of the application the sync of the tunnel serving that Gateway keeps.
func (t *translator) applicationCondition(ai *accessInfo, u *accessUse, c *conds) {
	const waitAnswer = "; until an application exists its rules answer 503"
	if u.ref.Kind == nil || *u.ref.Kind != "Gateway" || u.ref.Namespace == nil {
		return // a target not found: Accepted says so
	}
	gi := t.gatewayByKey[nn(string(*u.ref.Namespace), string(u.ref.Name))]
	ts := t.tunnelOf(gi)
	st, ok := AccessAppState{}, false
	if ts != nil {
		st, ok = ts.AccessApps[ai.name()]
	}
	name := ai.obj.AppName()
	switch {
	case gi == nil:
		return
	case ts == nil:
		c.set(AccessConditionApplicationReady, false, reasonApplicationNoTunnel,
			"no tunnel serves this Gateway, so no Access application covers it"+waitAnswer)
	case !ok:
		c.set(AccessConditionApplicationReady, false, reasonApplicationPending, "the Access application "+strconv.Quote(name)+" is being made"+waitAnswer)
	case st.AUD == "":
		c.set(AccessConditionApplicationReady, false, reasonApplicationFailed, "the Access application "+strconv.Quote(name)+" cannot be made: "+st.Problem+waitAnswer)
	case st.Problem != "":
		c.set(AccessConditionApplicationReady, true, reasonApplicationProgrammed, "the Access application "+strconv.Quote(name)+
			" (AUD "+st.AUD+") exists; its last change failed: "+st.Problem)
	default:
		c.set(AccessConditionApplicationReady, true, reasonApplicationProgrammed, "the Access application "+strconv.Quote(name)+
			" (AUD "+st.AUD+") covers the hostnames it protects here")
	}
}
