// This file attaches DNSPolicies to listeners and routes, decides which public hostnames' DNS is left to others, and reports them.

package translate

import (
	"fmt"
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// DNSPolicies say who keeps the DNS records of the public hostnames their
// targets serve (docs/cloudflare.md).
//
//   - A policy names targets in its namespace: a Gateway (sectionName:
//     one of the Gateway's own listeners), or a route of any of the four
//     kinds. It covers the public hostnames its targets publish: a
//     route's, through every listener that accepts it (its hostnames as
//     attached, after claims: claims.go); a listener's or a Gateway's, as
//     the accepted routes attached to it publish them.
//   - Between policies naming the same target (a Gateway whole and one
//     of its listeners are two targets), the oldest holds it; the others
//     are Conflicted on that target's ancestors.
//   - A hostname that any Unmanaged policy holding a target covers is
//     unmanaged, whatever route, Gateway or tunnel publishes it: two
//     managers of one name would fight, so the one told to step aside
//     does. Hostname.UnmanagedDNS tells the Cloudflare sync, which
//     creates no record for it, removes the records it owns there and
//     touches no other; the tunnel's ingress document still routes it.
//     The DNS condition of every route publishing it says which policy
//     left it to others (DNSReasonUnmanaged). A load balanced hostname
//     (LoadBalancingPolicy) has no CNAME either way: its load balancer
//     answers for it, and the sync reports it as load balanced.
//   - Managed is what happens without a policy: it holds its targets and
//     changes nothing else.
//
// Each ancestor (a Gateway, with the listener for a sectionName; for a
// route, each Gateway accepting it; a target not found, itself; one of
// another controller, none: othersTarget) carries
// Accepted (or Conflicted, TargetNotFound). A Gateway through which an
// Unmanaged policy reaches a hostname carries ConditionDNSPolicyAffected.

// DNSReasonUnmanaged is the DNS condition's reason on a route whose
// hostnames' DNS a DNSPolicy leaves to others.
const DNSReasonUnmanaged = "Unmanaged"

// ConditionDNSPolicyAffected marks a Gateway through which a DNSPolicy
// leaves hostnames' DNS to others, as GEP-713 names it: <domain>/<policy
// kind>Affected.
const ConditionDNSPolicyAffected = "tunnelgate.dev/DNSPolicyAffected"

// dnsInfo is one DNSPolicy.
type dnsInfo struct {
	obj       *v1alpha1.DNSPolicy
	unmanaged bool
	// invalid says why its spec cannot be applied (a records value the
	// CRD would refuse, read by standalone mode): it then holds its
	// targets and changes nothing, as Managed does.
	invalid string
	uses    []*dnsUse
}

func (di *dnsInfo) name() string { return di.obj.Namespace + "/" + di.obj.Name }

// dnsUse is what a policy does under one ancestor.
type dnsUse struct {
	ref gwv1.ParentReference
	gw  *gatewayInfo // nil for a target not found
	// applies are the targets held there; conflicted those an older
	// policy holds; notFound those that cannot be found.
	applies    []string
	conflicted []string
	notFound   []string
	// hosts are the public hostnames the targets it holds publish there.
	hosts []string
}

func (di *dnsInfo) use(ref gwv1.ParentReference, gw *gatewayInfo) *dnsUse {
	for _, u := range di.uses {
		if SameParentRef(&u.ref, &ref) {
			return u
		}
	}
	u := &dnsUse{ref: ref, gw: gw}
	di.uses = append(di.uses, u)
	return u
}

// dnsPolicies resolves every DNSPolicy once routes are attached and their
// claims settled, before route statuses are written (they read dnsLeft):
// it decides which targets each holds and the hostnames left to others.
// dnsStatuses writes the policies' statuses.
func (t *translator) dnsPolicies(routes []pending) {
	if len(t.in.DNSPolicies) == 0 {
		return
	}
	ps := slices.Clone(t.in.DNSPolicies)
	slices.SortFunc(ps, func(a, b *v1alpha1.DNSPolicy) int { return compareAge(&a.ObjectMeta, &b.ObjectMeta) })
	byKey := map[accessTarget]pending{}
	for _, p := range routes {
		byKey[accessTarget{p.info.kind, p.info.meta.Namespace, p.info.meta.Name, ""}] = p
	}
	holder := map[accessTarget]*dnsInfo{}
	for _, p := range ps {
		di := &dnsInfo{obj: p, unmanaged: p.Spec.Records == v1alpha1.DNSRecordsUnmanaged}
		switch p.Spec.Records {
		case "", v1alpha1.DNSRecordsManaged, v1alpha1.DNSRecordsUnmanaged:
		default:
			di.invalid = fmt.Sprintf("spec.records: %q is not Managed or Unmanaged", p.Spec.Records)
		}
		for i := range p.Spec.TargetRefs {
			t.resolveDNSTarget(di, &p.Spec.TargetRefs[i], byKey, holder)
		}
		t.dnsList = append(t.dnsList, di)
		if !di.unmanaged {
			continue
		}
		for _, u := range di.uses {
			for _, h := range u.hosts {
				if _, taken := t.dnsLeft[h]; !taken {
					if t.dnsLeft == nil {
						t.dnsLeft = map[string]string{}
					}
					t.dnsLeft[h] = di.name()
				}
			}
		}
	}
}

// resolveDNSTarget records one target under its ancestors: held, held by
// an older policy, or not found; and the hostnames it publishes there.
func (t *translator) resolveDNSTarget(di *dnsInfo, tr *gwv1.LocalPolicyTargetReferenceWithSectionName,
	routes map[accessTarget]pending, holder map[accessTarget]*dnsInfo) {
	ns, section := di.obj.Namespace, sectionOf(tr.SectionName)
	desc := fmt.Sprintf("%s %s", tr.Kind, tr.Name)
	if section != "" {
		desc += " (listener " + section + ")"
	}
	notFound := func(msg string) {
		u := di.use(targetAncestor(ns, tr), nil)
		u.notFound = append(u.notFound, msg)
	}
	if string(tr.Group) != groupGateway {
		notFound(fmt.Sprintf("%s: a target is a Gateway or a route of group %s", desc, groupGateway))
		return
	}
	key := accessTarget{string(tr.Kind), ns, string(tr.Name), section}
	// hold takes the target for di, or reports which older policy holds
	// it; false when it is not di's.
	hold := func(u *dnsUse) bool {
		if h := holder[key]; h != nil && h != di {
			u.conflicted = appendNew(u.conflicted, fmt.Sprintf("%s is named by the older DNSPolicy %s", desc, h.name()))
			return false
		}
		holder[key] = di
		u.applies = appendNew(u.applies, desc)
		return true
	}
	switch string(tr.Kind) {
	case "Gateway":
		if t.othersTarget(ns, tr, routes) {
			return // another controller's: its status there is that controller's
		}
		gi, ls, missing := t.policyGateway(ns, string(tr.Name), section)
		if missing != "" {
			notFound(missing)
			return
		}
		u := di.use(gatewayAncestor(gi, section), gi)
		if !hold(u) {
			return
		}
		for _, l := range ls {
			for _, a := range t.attachments[l] {
				if a.lostTo == "" && routeAccepted(a.route, gi) {
					u.addHosts(a.held())
				}
			}
		}
		return
	case kindHTTPRoute, kindGRPCRoute, kindTCPRoute, kindTLSRoute:
		if section != "" {
			notFound(desc + ": a route is named whole, without a sectionName")
			return
		}
		if t.othersTarget(ns, tr, routes) {
			return
		}
		p, ok := routes[accessTarget{string(tr.Kind), ns, string(tr.Name), ""}]
		if !ok {
			notFound(fmt.Sprintf("%s %s/%s not found", tr.Kind, ns, tr.Name))
			return
		}
		found := false
		for _, pi := range p.info.parents {
			if !pi.accepted() {
				continue
			}
			found = true
			u := di.use(gatewayAncestor(pi.gw, ""), pi.gw)
			if !hold(u) {
				continue
			}
			for _, a := range pi.attachments {
				if a.lostTo == "" {
					u.addHosts(a.held())
				}
			}
		}
		if !found {
			notFound(fmt.Sprintf("%s %s/%s is not accepted by a Gateway of this controller's classes", tr.Kind, ns, tr.Name))
		}
		return
	}
	notFound(desc + ": a target is a Gateway, an HTTPRoute, a GRPCRoute, a TCPRoute or a TLSRoute")
}

func (u *dnsUse) addHosts(hosts []string) {
	for _, h := range hosts {
		u.hosts = appendNew(u.hosts, h)
	}
}

// appendNew appends s to list unless list holds it.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// dnsStatuses writes every DNSPolicy's ancestor statuses.
func (t *translator) dnsStatuses() {
	for _, di := range t.dnsList {
		t.out.DNSPolicies[nn(di.obj.Namespace, di.obj.Name)] = policyAncestors(t, v1alpha1.KindDNSPolicy, &di.obj.ObjectMeta, di.obj.Status.Ancestors, di.uses,
			func(u *dnsUse) *gwv1.ParentReference { return &u.ref },
			func(u *dnsUse, c *conds) { t.dnsConditions(di, u, c) })
	}
}

// dnsConditions are one ancestor's conditions (see the top of the file).
func (t *translator) dnsConditions(di *dnsInfo, u *dnsUse, c *conds) {
	accepted := string(gwv1.PolicyConditionAccepted)
	switch {
	case len(u.applies) == 0 && len(u.conflicted) > 0:
		c.set(accepted, false, string(gwv1.PolicyReasonConflicted), joinLimited(u.conflicted))
		return
	case len(u.applies) == 0:
		c.set(accepted, false, string(gwv1.PolicyReasonTargetNotFound), joinLimited(u.notFound))
		return
	case di.invalid != "":
		c.set(accepted, false, string(gwv1.PolicyReasonInvalid), di.invalid)
		return
	}
	hosts := slices.Sorted(slices.Values(u.hosts))
	through := listLimited(u.applies)
	var msg string
	switch {
	case len(hosts) == 0:
		msg = "no public hostname is published through " + through + " yet"
	case di.unmanaged:
		msg = fmt.Sprintf("the DNS records of %s, published through %s, are left to others: tunnelgate creates none and removes those it owns",
			listLimited(hosts), through)
	default:
		var kept, left []string
		for _, h := range hosts {
			if p, ok := t.dnsLeft[h]; ok {
				left = append(left, h+" (by DNSPolicy "+p+")")
			} else {
				kept = append(kept, h)
			}
		}
		if len(kept) > 0 {
			msg = fmt.Sprintf("tunnelgate keeps the DNS records of %s, published through %s", listLimited(kept), through)
		} else {
			msg = "every hostname published through " + through + " is left to others"
		}
		if len(left) > 0 {
			msg += "; left to others, as an Unmanaged policy wins: " + listLimited(left)
		}
	}
	if rest := append(slices.Clone(u.conflicted), u.notFound...); len(rest) > 0 {
		msg += "; " + joinLimited(rest)
	}
	c.set(accepted, true, string(gwv1.PolicyReasonAccepted), msg)
}

// dnsGatewayCondition marks a Gateway through which an Unmanaged policy
// reaches a hostname.
func (t *translator) dnsGatewayCondition(gi *gatewayInfo) {
	if len(t.dnsList) == 0 || !gi.accepted {
		return
	}
	var parts []string
	for _, di := range t.dnsList {
		if !di.unmanaged {
			continue
		}
		var hosts []string
		for _, u := range di.uses {
			if u.gw == gi && len(u.applies) > 0 {
				hosts = append(hosts, u.hosts...)
			}
		}
		if len(hosts) > 0 {
			slices.Sort(hosts)
			parts = append(parts, fmt.Sprintf("DNSPolicy %s leaves %s", di.name(), listLimited(slices.Compact(hosts))))
		}
	}
	if len(parts) > 0 {
		gi.conds.set(ConditionDNSPolicyAffected, true, DNSReasonUnmanaged,
			"tunnelgate keeps no DNS records for hostnames left to others: "+joinLimited(parts))
	}
}

// leftOf says which hostnames a route publishes that DNSPolicies leave
// to others, and by which policy: "" for none. Another route's policy
// may leave one, so a remembered translation of the route stands only
// while this is the same (routeMemo.left).
func (t *translator) leftOf(r *routeInfo) string {
	if len(t.dnsLeft) == 0 {
		return ""
	}
	var out []string
	useHosts(r, func(h, _ string, _ bool) {
		if p, ok := t.dnsLeft[h]; ok {
			out = appendNew(out, h+"="+p)
		}
	})
	slices.Sort(out)
	return strings.Join(out, ",")
}

// markUnmanaged sets Hostname.UnmanagedDNS on the hostnames DNSPolicies
// leave to others, for the tunnels' syncs.
func (t *translator) markUnmanaged() {
	if len(t.dnsLeft) == 0 {
		return
	}
	mark := func(hs []Hostname) {
		for i := range hs {
			_, hs[i].UnmanagedDNS = t.dnsLeft[hs[i].Name]
		}
	}
	mark(t.out.Hostnames)
	for _, p := range t.out.Planes {
		mark(p.Hostnames)
	}
}
