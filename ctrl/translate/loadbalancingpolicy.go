// This file attaches LoadBalancingPolicies to listeners and routes, and reports them.

package translate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// LoadBalancingPolicies make this cluster one origin of a Cloudflare load
// balancer on a hostname (docs/multi-cluster.md).
//
//   - A policy names targets in its namespace: a Gateway (sectionName:
//     one of the Gateway's own listeners) or an HTTPRoute. Its hostname
//     must be one a target serves: an HTTP or HTTPS listener's hostname or
//     one its wildcard covers (a listener without a hostname serves any),
//     or one of an HTTPRoute's hostnames (or, for a route without any,
//     one its listeners serve).
//   - Between policies naming the same hostname, the oldest one a target
//     of which serves it holds it; the others are Conflicted on every
//     ancestor. Naming a hostname no target serves takes nothing. A policy whose spec is invalid still holds its
//     hostname, so that a bad edit never hands it to another.
//   - The holder, when valid, asks the Cloudflare sync for a
//     LoadBalancing (Output.LoadBalancers), which the controller hands to
//     each tunnel that routes the hostname.
//   - The listeners through which its targets publish the hostname answer
//     the load balancer's monitor (proxycfg.Listener.HealthCheck) once
//     the sync reports the monitor's token (LBState.HealthToken); until
//     then none does. A listener answers one policy's monitor: the oldest
//     one's.
//
// Each ancestor (a Gateway, with the listener for a sectionName; for an
// HTTPRoute, each Gateway accepting it; a target not found, itself; one
// of another controller, none: othersTarget)
// carries Accepted (or Conflicted, TargetNotFound, Invalid) and, when
// accepted, LBConditionReady from what the sync of the Gateway's tunnel
// reports. A Gateway a tunnel carries that publishes a hostname a valid
// policy holds carries ConditionLBPolicyAffected.

// LBConditionReady is a LoadBalancingPolicy ancestor's condition: is
// this cluster's origin in its pool, and do the pool, monitor and load
// balancer exist?
const LBConditionReady = "tunnelgate.dev/LoadBalancerReady"

// LBConditionReady's reasons, besides the LBState's own (LBReason*).
const (
	lbReasonReady        = "Ready"
	lbReasonNoTunnel     = "NoTunnel"
	lbReasonNotPublished = "HostnameNotPublished"
)

// lbInfo is one LoadBalancingPolicy.
type lbInfo struct {
	obj *v1alpha1.LoadBalancingPolicy
	// lb is what it asks of the sync; invalid says why its spec cannot be
	// applied (lb is then unset).
	lb      LoadBalancing
	invalid string
	host    string
	// uses are its ancestors' outcomes.
	uses []*lbUse
	// lostTo is the older policy holding its hostname, "" when it holds it
	// or no target exists.
	lostTo string
}

func (li *lbInfo) name() string { return li.obj.Namespace + "/" + li.obj.Name }

// lbUse is what a policy does under one ancestor.
type lbUse struct {
	ref gwv1.ParentReference
	gw  *gatewayInfo // nil for a target not found
	// applies are the targets found there; notFound and notServed explain
	// those that cannot be found, or do not serve the hostname.
	applies   []string
	notFound  []string
	notServed []string
	// listeners publish the hostname there, through the targets.
	listeners []*listenerInfo
	// healthTaken names the older policy whose monitor a listener answers
	// instead.
	healthTaken []string
}

func (li *lbInfo) use(ref gwv1.ParentReference, gw *gatewayInfo) *lbUse {
	for _, u := range li.uses {
		if SameParentRef(&u.ref, &ref) {
			return u
		}
	}
	u := &lbUse{ref: ref, gw: gw}
	li.uses = append(li.uses, u)
	return u
}

// loadBalancing resolves every LoadBalancingPolicy, after routes are
// attached and before Gateways' statuses: it decides their ancestors,
// which holds each hostname, the LoadBalancings asked for and the
// listeners' health checks. lbStatuses writes the statuses.
func (t *translator) loadBalancing() {
	if len(t.in.LoadBalancingPolicies) == 0 {
		return
	}
	ps := slices.Clone(t.in.LoadBalancingPolicies)
	slices.SortFunc(ps, func(a, b *v1alpha1.LoadBalancingPolicy) int { return compareAge(&a.ObjectMeta, &b.ObjectMeta) })
	routes := map[accessTarget]pending{}
	for _, p := range t.routeList {
		routes[accessTarget{p.info.kind, p.info.meta.Namespace, p.info.meta.Name, ""}] = p
	}
	holder := map[string]*lbInfo{}
	for _, p := range ps {
		li := &lbInfo{obj: p, host: strings.ToLower(p.Spec.Hostname)}
		lb, errs := loadBalancingOf(p)
		if len(errs) > 0 {
			li.invalid = strings.ReplaceAll(errors.Join(errs...).Error(), "\n", "; ")
		} else {
			li.lb = lb
		}
		for i := range p.Spec.TargetRefs {
			t.resolveLBTarget(li, &p.Spec.TargetRefs[i], routes)
		}
		t.lbList = append(t.lbList, li)
		if !li.serves() {
			continue // holds nothing: a hostname is not taken by naming it
		}
		if h := holder[li.host]; h != nil {
			li.lostTo = h.name()
			continue
		}
		holder[li.host] = li
	}
	for _, li := range t.lbList {
		if li.lostTo == "" && li.invalid == "" && li.published() {
			t.out.LoadBalancers = append(t.out.LoadBalancers, li.lb)
			t.lbHealthChecks(li)
		}
	}
	slices.SortFunc(t.out.LoadBalancers, func(a, b LoadBalancing) int { return strings.Compare(a.Policy, b.Policy) })
}

// lbStatuses writes every LoadBalancingPolicy's ancestor statuses.
func (t *translator) lbStatuses() {
	for _, li := range t.lbList {
		t.out.LoadBalancingPolicies[nn(li.obj.Namespace, li.obj.Name)] = t.lbAncestors(li)
	}
}

// ConditionLBPolicyAffected marks a Gateway through which a
// LoadBalancingPolicy puts a hostname behind a load balancer, as GEP-713
// names it: <domain>/<policy kind>Affected.
const ConditionLBPolicyAffected = "tunnelgate.dev/LoadBalancingPolicyAffected"

const reasonLoadBalanced = "LoadBalanced"

// lbGatewayCondition marks a Gateway, carried by a tunnel, that serves a
// hostname a valid policy holds.
func (t *translator) lbGatewayCondition(gi *gatewayInfo) {
	if len(t.lbList) == 0 || !gi.accepted || !throughTunnel(gi) {
		return
	}
	var hosts []string
	for _, li := range t.lbList {
		if li.lostTo != "" || li.invalid != "" {
			continue
		}
		for _, u := range li.uses {
			if u.gw == gi && len(u.applies) > 0 && len(u.listeners) > 0 {
				hosts = append(hosts, fmt.Sprintf("%s (LoadBalancingPolicy %s)", li.host, li.name()))
				break
			}
		}
	}
	if len(hosts) > 0 {
		slices.Sort(hosts)
		gi.conds.set(ConditionLBPolicyAffected, true, reasonLoadBalanced,
			"its tunnel is an origin of the Cloudflare load balancers of "+listLimited(hosts))
	}
}

// serves reports whether a target of the policy serves its hostname.
func (li *lbInfo) serves() bool {
	return slices.ContainsFunc(li.uses, func(u *lbUse) bool { return len(u.applies) > 0 })
}

// published reports whether some listener of a Gateway a tunnel carries
// publishes the policy's hostname through its targets: without one, no
// tunnel routes the hostname, and nothing is asked of Cloudflare.
func (li *lbInfo) published() bool {
	return slices.ContainsFunc(li.uses, func(u *lbUse) bool { return len(u.listeners) > 0 && throughTunnel(u.gw) })
}

// resolveLBTarget records the target under its ancestors: whether it
// serves the policy's hostname, and through which listeners it publishes
// it; or why it cannot be found.
func (t *translator) resolveLBTarget(li *lbInfo, tr *gwv1.LocalPolicyTargetReferenceWithSectionName, routes map[accessTarget]pending) {
	ns, section := li.obj.Namespace, sectionOf(tr.SectionName)
	desc := fmt.Sprintf("%s %s", tr.Kind, tr.Name)
	if section != "" {
		desc += " (listener " + section + ")"
	}
	notFound := func(msg string) {
		u := li.use(targetAncestor(ns, tr), nil)
		u.notFound = append(u.notFound, msg)
	}
	if string(tr.Group) != groupGateway {
		notFound(fmt.Sprintf("%s: a target is a Gateway or an HTTPRoute of group %s", desc, groupGateway))
		return
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
		u := li.use(gatewayAncestor(gi, section), gi)
		served := false
		for _, l := range ls {
			if !httpListener(l) || !listenerTakes(l.hostname, li.host) {
				continue
			}
			served = true
			for _, a := range t.attachments[l] {
				if !streamKind(a.route.kind) && a.lostTo == "" && slices.Contains(a.held(), li.host) && routeAccepted(a.route, gi) {
					addListener(u, l)
				}
			}
		}
		if served {
			u.applies = append(u.applies, desc)
		} else {
			u.notServed = append(u.notServed, fmt.Sprintf("%s has no HTTP or HTTPS listener for hostname %s", desc, li.host))
		}
		return
	case kindHTTPRoute:
		if section != "" {
			notFound(desc + ": an HTTPRoute is named whole, without a sectionName")
			return
		}
		if t.othersTarget(ns, tr, routes) {
			return
		}
		p, ok := routes[accessTarget{kindHTTPRoute, ns, string(tr.Name), ""}]
		if !ok {
			notFound(fmt.Sprintf("HTTPRoute %s/%s not found", ns, tr.Name))
			return
		}
		var gws []*gatewayInfo
		for _, pi := range p.info.parents {
			if pi.accepted() && !slices.Contains(gws, pi.gw) {
				gws = append(gws, pi.gw)
			}
		}
		if len(gws) == 0 {
			notFound(fmt.Sprintf("HTTPRoute %s/%s is not accepted by a Gateway of this controller's classes", ns, tr.Name))
			return
		}
		named := routeNames(p.info.hostnames, li.host)
		for _, gi := range gws {
			u := li.use(gatewayAncestor(gi, ""), gi)
			served := false
			for _, pi := range p.info.parents {
				if pi.gw != gi || !pi.accepted() {
					continue
				}
				for _, a := range pi.attachments {
					if !httpListener(a.listener) || !listenerTakes(a.listener.hostname, li.host) {
						continue
					}
					if named || len(p.info.hostnames) == 0 {
						served = true
					}
					if a.lostTo == "" && slices.Contains(a.held(), li.host) {
						addListener(u, a.listener)
					}
				}
			}
			if served {
				u.applies = append(u.applies, desc)
			} else {
				u.notServed = append(u.notServed, fmt.Sprintf("%s does not serve hostname %s here (not among its hostnames, or no listener it attaches to takes it)", desc, li.host))
			}
		}
		return
	}
	notFound(desc + ": a target is a Gateway or an HTTPRoute")
}

// routeNames reports whether a route's hostnames name host: exactly, or
// by a wildcard covering it.
func routeNames(hostnames []gwv1.Hostname, host string) bool {
	for _, h := range hostnames {
		rh := strings.ToLower(string(h))
		if rh == host || strings.HasPrefix(rh, "*.") && coveredBy(host, rh) {
			return true
		}
	}
	return false
}

// routeAccepted reports whether route r is accepted by Gateway gi.
func routeAccepted(r *routeInfo, gi *gatewayInfo) bool {
	return slices.ContainsFunc(r.parents, func(pi *parentInfo) bool { return pi.gw == gi && pi.accepted() })
}

// httpListener reports whether a listener is served and answers health
// requests (HTTP and HTTPS listeners only).
func httpListener(l *listenerInfo) bool {
	return l.protocol == gwv1.HTTPProtocolType || l.protocol == gwv1.HTTPSProtocolType
}

// listenerTakes reports whether a listener of hostname lh takes requests
// for host.
func listenerTakes(lh, host string) bool {
	return lh == "" || lh == host || strings.HasPrefix(lh, "*.") && coveredBy(host, lh)
}

func addListener(u *lbUse, l *listenerInfo) {
	if !slices.Contains(u.listeners, l) {
		u.listeners = append(u.listeners, l)
	}
}

// lbHealthChecks gives the listeners publishing a policy's hostname its
// monitor's health check, once the sync of their Gateway's tunnel knows
// the token; a listener already answering an older policy's keeps it.
func (t *translator) lbHealthChecks(li *lbInfo) {
	for _, u := range li.uses {
		st, ok := t.lbState(u.gw, li)
		if !ok || len(st.HealthToken) < proxycfg.MinHealthTokenLen {
			continue
		}
		for _, l := range u.listeners {
			if !l.serves() || !l.gw.accepted {
				continue
			}
			if other, taken := t.lbHealthBy[l]; taken && other != li {
				if !slices.Contains(u.healthTaken, other.name()) {
					u.healthTaken = append(u.healthTaken, other.name())
				}
				continue
			}
			if t.lbHealth == nil {
				t.lbHealth, t.lbHealthBy = map[*listenerInfo]*proxycfg.HealthCheck{}, map[*listenerInfo]*lbInfo{}
			}
			t.lbHealth[l] = &proxycfg.HealthCheck{Path: li.lb.Monitor.Path, Header: LBHealthHeader, Token: st.HealthToken}
			t.lbHealthBy[l] = li
		}
	}
}

// throughTunnel reports whether a tunnel carries the Gateway: its own
// plane's, or its class's.
func throughTunnel(gi *gatewayInfo) bool {
	if gi.onPlane() {
		_, ok := gi.planeTunnelKey()
		return ok
	}
	return gi.class != nil && gi.class.config != nil && gi.class.config.Spec.Tunnel != nil
}

// lbState is what the sync of the tunnel serving gi reports for the
// policy; false when it reported nothing (or no tunnel serves gi).
func (t *translator) lbState(gi *gatewayInfo, li *lbInfo) (LBState, bool) {
	if gi == nil {
		return LBState{}, false
	}
	ts := t.tunnelOf(gi)
	if ts == nil {
		return LBState{}, false
	}
	st, ok := ts.LoadBalancers[li.name()]
	return st, ok
}

// lbAncestors are a policy's ancestor statuses (policyAncestors).
func (t *translator) lbAncestors(li *lbInfo) []gwv1.PolicyAncestorStatus {
	return policyAncestors(t, v1alpha1.KindLoadBalancingPolicy, &li.obj.ObjectMeta, li.obj.Status.Ancestors, li.uses,
		func(u *lbUse) *gwv1.ParentReference { return &u.ref },
		func(u *lbUse, c *conds) { t.lbConditions(li, u, c) })
}

// lbConditions are one ancestor's conditions (see the top of the file).
func (t *translator) lbConditions(li *lbInfo, u *lbUse, c *conds) {
	accepted := string(gwv1.PolicyConditionAccepted)
	switch {
	case len(u.applies) == 0 && len(u.notServed) == 0:
		c.set(accepted, false, string(gwv1.PolicyReasonTargetNotFound), joinLimited(u.notFound))
		return
	case li.lostTo != "":
		c.set(accepted, false, string(gwv1.PolicyReasonConflicted),
			fmt.Sprintf("hostname %s is load balanced by the older LoadBalancingPolicy %s", li.host, li.lostTo))
		return
	case li.invalid != "":
		c.set(accepted, false, string(gwv1.PolicyReasonInvalid), li.invalid)
		return
	case len(u.applies) == 0:
		c.set(accepted, false, string(gwv1.PolicyReasonInvalid), joinLimited(u.notServed))
		return
	}
	msg := fmt.Sprintf("load balances hostname %s through %s", li.host, joinLimited(u.applies))
	if rest := append(slices.Clone(u.notServed), u.notFound...); len(rest) > 0 {
		msg += "; " + joinLimited(rest)
	}
	c.set(accepted, true, string(gwv1.PolicyReasonAccepted), msg)

	st, reported := t.lbState(u.gw, li)
	switch {
	case !throughTunnel(u.gw):
		c.set(LBConditionReady, false, lbReasonNoTunnel, "no tunnel serves this Gateway, so it cannot be an origin of a load balancer")
	case len(u.listeners) == 0:
		c.set(LBConditionReady, false, lbReasonNotPublished,
			fmt.Sprintf("no accepted HTTPRoute publishes hostname %s through the targets here, so the tunnel does not route it", li.host))
	case !reported:
		c.set(LBConditionReady, false, LBReasonPending, "the Cloudflare sync of the Gateway's tunnel has not reported on the load balancer yet")
	case !st.Ready:
		c.set(LBConditionReady, false, st.Reason, st.Message)
	default:
		msg := fmt.Sprintf("this cluster's origin is in pool %s (%s), behind the load balancer %s", li.lb.Pool, plural(st.Origins, "origin"), li.host)
		switch {
		case len(st.HealthToken) < proxycfg.MinHealthTokenLen:
			msg += "; the monitor's token is not known yet, so the proxies do not answer its probes"
		case len(u.healthTaken) > 0:
			slices.Sort(u.healthTaken)
			msg += "; a listener answers the monitor of " + listLimited(u.healthTaken) + " instead, so probes of this one are routed as requests"
		}
		c.set(LBConditionReady, true, lbReasonReady, msg)
	}
}

// steerings are Cloudflare's spellings of the steering policies.
var steerings = map[v1alpha1.LBSteering]string{
	v1alpha1.SteeringOff:                      "off",
	v1alpha1.SteeringRandom:                   "random",
	v1alpha1.SteeringGeo:                      "geo",
	v1alpha1.SteeringDynamicLatency:           "dynamic_latency",
	v1alpha1.SteeringProximity:                "proximity",
	v1alpha1.SteeringLeastOutstandingRequests: "least_outstanding_requests",
	v1alpha1.SteeringLeastConnections:         "least_connections",
}

// affinities are Cloudflare's spellings of the session affinities.
var affinities = map[v1alpha1.LBAffinity]string{
	v1alpha1.AffinityNone:     "none",
	v1alpha1.AffinityCookie:   "cookie",
	v1alpha1.AffinityIPCookie: "ip_cookie",
}

// ValidateLoadBalancingPolicy reports what is wrong with a policy's spec
// (what the CRD cannot check, and what it does, for standalone mode):
// every problem, each naming the policy and the field.
func ValidateLoadBalancingPolicy(p *v1alpha1.LoadBalancingPolicy) error {
	_, errs := loadBalancingOf(p)
	for i, err := range errs {
		errs[i] = fmt.Errorf("LoadBalancingPolicy %s/%s: %w", p.Namespace, p.Name, err)
	}
	return errors.Join(errs...)
}

// loadBalancingOf is what a policy asks of the sync, defaults applied,
// or its spec's problems, each naming its field.
func loadBalancingOf(p *v1alpha1.LoadBalancingPolicy) (LoadBalancing, []error) {
	s := &p.Spec
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("spec.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	lb := LoadBalancing{Policy: p.Namespace + "/" + p.Name, Hostname: strings.ToLower(s.Hostname), Pool: s.Pool,
		Weight: float64(v1alpha1.DefaultLBWeight) / 100, Enabled: true, Steering: "off", SessionAffinity: "none",
		DeleteUnused: s.DeleteUnused}
	if len(s.TargetRefs) == 0 {
		bad("targetRefs", "names no target")
	}
	if h := lb.Hostname; !validHostname(h) || strings.HasPrefix(h, "*.") || !strings.Contains(h, ".") {
		bad("hostname", "%q is not a hostname of at least two labels (no wildcard)", s.Hostname)
	}
	if !validPoolName(s.Pool) {
		bad("pool", "%q must be 1 to 100 letters, digits, '-' or '_'", s.Pool)
	}
	lb.Pools = []string{s.Pool}
	if len(s.FailoverPools) > 0 {
		lb.Pools = slices.Clone(s.FailoverPools)
		for i, fp := range s.FailoverPools {
			switch {
			case !validPoolName(fp):
				bad("failoverPools["+strconv.Itoa(i)+"]", "%q must be 1 to 100 letters, digits, '-' or '_'", fp)
			case slices.Index(s.FailoverPools, fp) != i:
				bad("failoverPools["+strconv.Itoa(i)+"]", "pool %q is named twice", fp)
			}
		}
		if !slices.Contains(s.FailoverPools, s.Pool) {
			bad("failoverPools", "must contain pool %q", s.Pool)
		}
	}
	if w := s.Weight; w != nil {
		if *w < 0 || *w > 100 {
			bad("weight", "%d is not a percent from 0 to 100", *w)
		}
		lb.Weight = float64(*w) / 100
	}
	if s.Enabled != nil {
		lb.Enabled = *s.Enabled
	}
	if s.Steering != "" {
		st, ok := steerings[s.Steering]
		if !ok {
			bad("steering", "%q is not one of Off, Random, Geo, DynamicLatency, Proximity, LeastOutstandingRequests, LeastConnections", s.Steering)
		}
		lb.Steering = st
	}
	if a := s.SessionAffinity; a != nil {
		if a.Type != "" {
			sa, ok := affinities[a.Type]
			if !ok {
				bad("sessionAffinity.type", "%q is not one of None, Cookie, IPCookie", a.Type)
			}
			lb.SessionAffinity = sa
		}
		if a.TTL != nil {
			d, err := parseDuration(string(*a.TTL))
			switch {
			case err != nil:
				bad("sessionAffinity.ttl", "%v", err)
			case d%time.Second != 0 || d < time.Second || d > v1alpha1.MaxLBAffinityTTLSeconds*time.Second:
				bad("sessionAffinity.ttl", "%s is not a whole number of seconds from 1s to 168h", *a.TTL)
			default:
				lb.SessionAffinityTTL = int(d / time.Second)
			}
		}
	}
	lb.Monitor, errs = monitorOf(s.HealthCheck, errs)
	return lb, errs
}

// monitorOf is a policy's health check, defaults applied; problems are
// added to errs.
func monitorOf(hc *v1alpha1.LBHealthCheck, errs []error) (LBMonitor, []error) {
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("spec.healthCheck.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	m := LBMonitor{Path: v1alpha1.DefaultLBHealthPath, Interval: 60, Timeout: 5, Retries: v1alpha1.DefaultLBRetries,
		ExpectedCodes: v1alpha1.DefaultLBExpectedCodes}
	if hc == nil {
		return m, errs
	}
	if hc.Path != "" {
		if err := checkHealthPath(hc.Path); err != nil {
			bad("path", "%v", err)
		}
		m.Path = hc.Path
	}
	seconds := func(field string, d *gwv1.Duration, lo, hi int, into *int) {
		if d == nil {
			return
		}
		v, err := parseDuration(string(*d))
		switch {
		case err != nil:
			bad(field, "%v", err)
		case v%time.Second != 0 || v < time.Duration(lo)*time.Second || v > time.Duration(hi)*time.Second:
			bad(field, "%s is not a whole number of seconds from %ds to %ds", *d, lo, hi)
		default:
			*into = int(v / time.Second)
		}
	}
	seconds("interval", hc.Interval, v1alpha1.MinLBIntervalSeconds, 3600, &m.Interval)
	seconds("timeout", hc.Timeout, 1, 10, &m.Timeout)
	if m.Timeout >= m.Interval {
		bad("timeout", "%ds must be shorter than the interval, %ds", m.Timeout, m.Interval)
	}
	if r := hc.Retries; r != nil {
		if *r < 0 || *r > v1alpha1.MaxLBRetries {
			bad("retries", "%d is not from 0 to %d", *r, v1alpha1.MaxLBRetries)
		}
		m.Retries = int(*r)
	}
	if hc.ExpectedCodes != "" {
		if hc.ExpectedCodes != "200" && hc.ExpectedCodes != "2xx" {
			bad("expectedCodes", "%q is not \"200\" or \"2xx\" (the proxies answer a healthy probe with 200)", hc.ExpectedCodes)
		}
		m.ExpectedCodes = hc.ExpectedCodes
	}
	return m, errs
}

// checkHealthPath accepts an absolute path in normal form without
// escapes, query or fragment: what the proxies compare a probe's path
// with as it is.
func checkHealthPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("must be an absolute path, starting with \"/\"")
	}
	if len(p) > 1024 {
		return errors.New("must be at most 1024 bytes")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,=:@/", c) >= 0) {
			return fmt.Errorf("byte %q: a path here is letters, digits and -._~!$&'()*+,=:@/ alone (no escapes, parameters, query or fragment)", c)
		}
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." || seg == "" && i < len(segs)-1 {
			return errors.New("must be in normal form: no empty, \".\" or \"..\" segments")
		}
	}
	return nil
}

// validPoolName reports whether s is a pool name as the CRD allows one.
func validPoolName(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
