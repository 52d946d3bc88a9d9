// This file implements Translate.

package translate

import (
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// translator carries one translation's working state. It lives for one
// call of Translate (or, kept by a Cache, until the next translation
// patches it: patch.go).
type translator struct {
	in   *Input
	look lookup // the snapshot's objects by name: the only way to them
	now  metav1.Time
	out  *Output
	// cache is nil in Translate. In Cache.Translate it is the cache, which
	// the translator asks for remembered work and tells what it did
	// (keyPairProblem, validated, reusable, noteRoute, completeMemo); each
	// of those is a no-op or a plain computation on nil.
	cache *Cache

	classByName   map[string]*classInfo
	gatewayByKey  map[types.NamespacedName]*gatewayInfo
	gatewayList   []*gatewayInfo
	setByKey      map[types.NamespacedName]*listenerSetInfo
	setList       []*listenerSetInfo
	listenerOrder []*listenerInfo
	attachments   map[*listenerInfo][]*attachment

	backends map[backendKey]resolvedBackend
	clusters []proxycfg.Cluster
	// clusterSchemes are the tunnel schemes of stream clusters, by name
	// (portScheme).
	clusterSchemes map[string]string
	policyByObj    map[*gwv1.BackendTLSPolicy]*policyInfo
	// AccessPolicies by what they target, oldest first (access.go); nil
	// when there are none.
	accessByTarget map[accessTarget][]*accessInfo
	accessList     []*accessInfo
	// LoadBalancingPolicies, oldest first, and the health checks they
	// give listeners, with the policy giving each (loadbalancingpolicy.go).
	lbList     []*lbInfo
	lbHealth   map[*listenerInfo]*proxycfg.HealthCheck
	lbHealthBy map[*listenerInfo]*lbInfo
	// DNSPolicies, oldest first, and the hostnames those of them that
	// are Unmanaged leave to others, with the oldest policy leaving each
	// (dnspolicy.go).
	dnsList []*dnsInfo
	dnsLeft map[string]string
	// othersGateways are the Gateways of other controllers' classes
	// (othersGateway), made at the first question.
	othersGateways map[types.NamespacedName]bool
	// routeList is every route of the translation, oldest first.
	routeList      []pending
	lastPolicies   []*policyInfo  // the policies the last resolved backend met
	clusterIdx     map[string]int // cluster name → index in clusters
	parents        slab[parentInfo]
	attachmentSlab slab[attachment]
	hostIndex      map[string]int

	// clockUses counts the conditions that took Now as their transition
	// time: a translation without any is repeatable at any time.
	clockUses int
}

// Translate turns a snapshot into proxy config, statuses, hostnames and
// events. It is pure: the same input gives the same output, and it never
// changes the input. Cache.Translate returns the same, faster when little
// changed since its last translation.
func Translate(in *Input) *Output {
	return newTranslator(in, nil).run()
}

func newTranslator(in *Input, c *Cache) *translator {
	return &translator{
		in:    in,
		look:  lookup{ix: buildIndex(&in.Snapshot)},
		now:   metav1Now(in),
		cache: c,
		out: &Output{
			Config: proxycfg.Config{Schema: proxycfg.SchemaVersion, Listeners: []proxycfg.Listener{},
				Routes: make([]proxycfg.Route, 0, len(in.HTTPRoutes)+len(in.GRPCRoutes)), Clusters: []proxycfg.Cluster{}},
			GatewayClasses:        map[string]*GatewayClassResult{},
			Gateways:              map[types.NamespacedName]*gwv1.GatewayStatus{},
			ListenerSets:          map[types.NamespacedName]*gwv1.ListenerSetStatus{},
			HTTPRoutes:            make(map[types.NamespacedName][]gwv1.RouteParentStatus, len(in.HTTPRoutes)),
			GRPCRoutes:            make(map[types.NamespacedName][]gwv1.RouteParentStatus, len(in.GRPCRoutes)),
			TCPRoutes:             make(map[types.NamespacedName][]gwv1.RouteParentStatus, len(in.TCPRoutes)),
			TLSRoutes:             make(map[types.NamespacedName][]gwv1.RouteParentStatus, len(in.TLSRoutes)),
			BackendTLSPolicies:    map[types.NamespacedName][]gwv1.PolicyAncestorStatus{},
			AccessPolicies:        map[types.NamespacedName][]gwv1.PolicyAncestorStatus{},
			LoadBalancingPolicies: map[types.NamespacedName][]gwv1.PolicyAncestorStatus{},
			DNSPolicies:           map[types.NamespacedName][]gwv1.PolicyAncestorStatus{},
			Hostnames:             make([]Hostname, 0, len(in.HTTPRoutes)+len(in.GRPCRoutes)),
		},
		classByName:  map[string]*classInfo{},
		gatewayByKey: map[types.NamespacedName]*gatewayInfo{},
		setByKey:     map[types.NamespacedName]*listenerSetInfo{},
		attachments:  map[*listenerInfo][]*attachment{},
		backends:     make(map[backendKey]resolvedBackend, len(in.Services)),
		clusters:     make([]proxycfg.Cluster, 0, len(in.Services)),
		hostIndex:    make(map[string]int, len(in.HTTPRoutes)+len(in.GRPCRoutes)),
		policyByObj:  map[*gwv1.BackendTLSPolicy]*policyInfo{},
	}
}

// run is a whole translation. The order of the steps is the order of
// dependence: classes, then Gateways and their ListenerSets, then routes
// binding to listeners, then the statuses that count what bound.
func (t *translator) run() *Output {
	t.classes()
	t.gateways()
	for _, si := range t.setList {
		t.setByKey[si.key] = si
		t.finishListenerSet(si)
	}
	for _, gi := range t.gatewayList {
		t.listenerOrder = append(t.listenerOrder, gi.listeners...)
	}
	t.assignAddresses()
	t.accessPolicies()
	t.routes()
	t.loadBalancing()
	t.gatewayStatuses()
	t.policyStatuses()
	t.accessStatuses()
	t.lbStatuses()
	t.dnsStatuses()
	t.assembleConfig()
	return t.out
}

// metav1Now is Now as conditions carry it: UTC, whole seconds (what the API
// server keeps).
func metav1Now(in *Input) metav1.Time { return metav1.NewTime(in.Now.UTC().Truncate(1e9)) }

// routes attaches every route, settles HTTPRoute/GRPCRoute conflicts,
// TCP listeners' routes and stream routes' origin ports and hostnames
// (streamroute.go), then translates the rules of each attached route and
// writes route statuses.
func (t *translator) routes() {
	n := len(t.in.HTTPRoutes) + len(t.in.GRPCRoutes) + len(t.in.TCPRoutes) + len(t.in.TLSRoutes)
	all := make([]pending, 0, n)
	infos := make([]routeInfo, 0, n) // one allocation for every route's working state
	for _, r := range t.in.HTTPRoutes {
		infos = append(infos, routeInfo{kind: kindHTTPRoute, meta: &r.ObjectMeta, parentRefs: r.Spec.ParentRefs,
			hostnames: r.Spec.Hostnames, prev: r.Status.Parents})
		all = append(all, pending{info: &infos[len(infos)-1], http: r})
	}
	for _, r := range t.in.GRPCRoutes {
		infos = append(infos, routeInfo{kind: kindGRPCRoute, meta: &r.ObjectMeta, parentRefs: r.Spec.ParentRefs,
			hostnames: r.Spec.Hostnames, prev: r.Status.Parents})
		all = append(all, pending{info: &infos[len(infos)-1], grpc: r})
	}
	for _, r := range t.in.TCPRoutes {
		infos = append(infos, routeInfo{kind: kindTCPRoute, meta: &r.ObjectMeta, parentRefs: r.Spec.ParentRefs, prev: r.Status.Parents})
		all = append(all, pending{info: &infos[len(infos)-1], tcp: r})
	}
	for _, r := range t.in.TLSRoutes {
		infos = append(infos, routeInfo{kind: kindTLSRoute, meta: &r.ObjectMeta, parentRefs: r.Spec.ParentRefs,
			hostnames: r.Spec.Hostnames, prev: r.Status.Parents})
		all = append(all, pending{info: &infos[len(infos)-1], tls: r})
	}
	for _, p := range all {
		if p.stream() {
			_, p.info.problem = streamRules(p)
		}
	}
	// Oldest first: attachments per listener keep that order, so conflicts
	// and precedence ties are settled the way the spec orders them.
	slices.SortFunc(all, func(a, b pending) int { return compareAge(a.info.meta, b.info.meta) })
	for _, p := range all {
		t.attach(p.info)
	}
	t.kindConflicts()
	t.tcpConflicts()
	t.originPorts(all)
	t.settleClaims(all)
	t.settleStreamClaims(all)
	t.dnsPolicies(all)
	t.routeList = all

	for _, p := range all {
		if p.stream() {
			t.streamResult(p)
		} else {
			t.routeResult(p)
		}
	}
}

// routeResult puts one attached route's translation into the output: a
// Cache's remembered one when it still holds, else a fresh one.
func (t *translator) routeResult(p pending) {
	r, obj := p.info, p.obj()
	var key objKey
	if t.cache != nil {
		key = anyKey(obj)
	}
	if len(r.parents) == 0 {
		t.cache.noteRoute(obj, key, r, nil, 0)
		return // no parent of ours
	}
	first := len(t.out.Config.Routes)
	m := t.cache.reusable(key, r, t.look.ix, t.leftOf(r))
	fresh := m == nil
	if fresh {
		m = t.translateRoute(r, p.http, p.grpc)
	}
	t.emit(m, r, fresh)
	t.cache.noteRoute(obj, key, r, m, first)
}

// pending is a route waiting for translation: its working state and its
// object, of one kind of the four.
type pending struct {
	info *routeInfo
	http *gwv1.HTTPRoute
	grpc *gwv1.GRPCRoute
	tcp  *gwv1.TCPRoute
	tls  *gwv1.TLSRoute
}

func (p pending) obj() any {
	switch {
	case p.http != nil:
		return p.http
	case p.tcp != nil:
		return p.tcp
	case p.tls != nil:
		return p.tls
	}
	return p.grpc
}

// stream reports whether p is a stream route (a TCPRoute or TLSRoute).
func (p pending) stream() bool { return p.tcp != nil || p.tls != nil }

// translateRoute translates one attached route: its rules into data-plane
// routes, which it appends to the config, and its parent statuses. emit
// puts the rest of the result in the output; a patch (patch.go) takes the
// result alone.
func (t *translator) translateRoute(r *routeInfo, http *gwv1.HTTPRoute, grpc *gwv1.GRPCRoute) *routeMemo {
	m := &routeMemo{}
	if t.cache != nil {
		t.look.log = &m.reads
		defer func() { t.look.log = nil }()
	}
	events, first := len(t.out.Events), len(t.out.Config.Routes)
	var buf [2]*ruleGroup // usually one group: on the stack
	groups := t.ruleGroups(r, buf[:0])
	var rs ruleSet
	var protectors map[*parentInfo][]*accessInfo // the policies protecting rules, per parent
	allDropped := true
	for gi, g := range groups {
		route := proxycfg.Route{Kind: proxycfg.RouteKind(r.kind), Namespace: r.meta.Namespace, Name: r.meta.Name,
			Created: r.meta.CreationTimestamp.Time.UTC()}
		route.Listeners, route.Hostnames = servedOn(g.attachments)
		var grs ruleSet
		if http != nil {
			grs = t.httpRules(http, &route, g.gw, g.access)
		} else {
			grs = t.grpcRules(grpc, &route, g.gw, g.access)
		}
		if gi == 0 {
			rs = grs // the rules' problems are the same in every group, but for their Access
		} else {
			rs.addDropped(grs.dropped)
		}
		for _, pi := range g.parents {
			for _, ai := range grs.protectors {
				if protectors == nil {
					protectors = map[*parentInfo][]*accessInfo{}
				}
				if !slices.Contains(protectors[pi], ai) {
					protectors[pi] = append(protectors[pi], ai)
				}
			}
		}
		dropped := len(grs.rules) == 0 && len(grs.dropped) > 0
		allDropped = allDropped && dropped
		route.Rules = grs.rules
		if len(route.Listeners) > 0 && !dropped {
			t.out.Config.Routes = append(t.out.Config.Routes, route)
		}
	}
	m.routes = t.out.Config.Routes[first:]
	statuses, fresh := t.routeStatus(r, &rs, allDropped, protectors)
	m.statuses = statuses
	m.counted = !allDropped && rs.unsupported == ""
	// The clock went into the result, or it told something once: neither
	// may be repeated by a later translation.
	m.noMemo = fresh || len(t.out.Events) != events
	if t.cache != nil {
		t.completeMemo(m, r)
	}
	return m
}

// ruleGroup is the listeners a route is served on with the same rules:
// their Gateways share a backend client certificate (or have none), and
// the listeners the same AccessPolicy.
type ruleGroup struct {
	cert        string // certIdentity
	gw          *gatewayInfo
	access      *accessInfo // the listeners' (listenerAccess)
	attachments []*attachment
	parents     []*parentInfo // the attachments', when there are AccessPolicies
}

// ruleGroups groups a route's attachments by what its rules depend on
// besides the route. A route is emitted once per group: its backends
// present the certificate of the Gateway the request came through
// (spec.tls.backend), so Gateways with different ones need their own
// clusters; and listeners protected by different AccessPolicies need
// their own rules. Usually there is one group. They are appended to
// groups.
func (t *translator) ruleGroups(r *routeInfo, groups []*ruleGroup) []*ruleGroup {
	whole := t.routeAccess(r.kind, r.meta.Namespace, r.meta.Name) != nil // the listeners' policies do not matter
	for _, pi := range r.parents {
		if !pi.accepted() {
			continue
		}
		cert := certIdentity(pi.gw)
		for _, a := range pi.attachments {
			if a.lostTo != "" {
				continue
			}
			var access *accessInfo
			if !whole {
				access = t.listenerAccess(a.listener)
			}
			i := -1
			for j, g := range groups {
				if g.cert == cert && g.access == access {
					i = j
				}
			}
			if i < 0 {
				i = len(groups)
				groups = append(groups, &ruleGroup{cert: cert, gw: pi.gw, access: access})
			}
			g := groups[i]
			g.attachments = append(g.attachments, a)
			if t.accessByTarget != nil && !slices.Contains(g.parents, pi) { // only policies need them
				g.parents = append(g.parents, pi)
			}
		}
	}
	if len(groups) == 0 {
		groups = append(groups, &ruleGroup{gw: r.parents[0].gw}) // for ResolvedRefs only
	}
	return groups
}

func certIdentity(gw *gatewayInfo) string {
	if gw.clientCertPEM == nil {
		return ""
	}
	return gw.key.String()
}

// servedOn lists the listeners that attachments serve a route on and the
// hostnames the router files its rules under (routerHosts); nil hostnames
// means any host the listeners take.
func servedOn(attachments []*attachment) (listeners, hostnames []string) {
	anyHost := false
	for _, a := range attachments {
		if !slices.Contains(listeners, a.listener.dpName) {
			listeners = append(listeners, a.listener.dpName)
		}
		hosts := a.routerHosts()
		if hosts == nil {
			anyHost = true
		}
		for _, h := range hosts {
			if !slices.Contains(hostnames, h) {
				hostnames = append(hostnames, h)
			}
		}
	}
	if anyHost {
		hostnames = nil
	}
	return listeners, hostnames
}

// routeStatus writes one route's parent statuses: Accepted per parentRef,
// and ResolvedRefs and PartiallyInvalid, which describe the rules and so
// are the same on every parent.
//
// fresh reports whether a condition got a new transition time (the clock
// went into the result).
func (t *translator) routeStatus(r *routeInfo, rs *ruleSet, allDropped bool, protectors map[*parentInfo][]*accessInfo) (_ []gwv1.RouteParentStatus, fresh bool) {
	out := make([]gwv1.RouteParentStatus, 0, len(r.parents))
	for _, pi := range r.parents {
		c := t.newConds(prevParentConds(r.prev, &pi.ref, t.in.ControllerName), r.meta.Generation)
		switch {
		case !pi.accepted():
			c.set(string(gwv1.RouteConditionAccepted), false, pi.reason, pi.msg)
		case rs.unsupported != "":
			c.set(string(gwv1.RouteConditionAccepted), false, string(gwv1.RouteReasonUnsupportedValue), rs.unsupported)
		case allDropped:
			c.set(string(gwv1.RouteConditionAccepted), false, string(gwv1.RouteReasonUnsupportedValue), "every rule is invalid: "+joinLimited(rs.dropped))
		default:
			c.set(string(gwv1.RouteConditionAccepted), true, string(gwv1.RouteReasonAccepted), joinNotes("route accepted", r.acceptNotes(pi)))
		}
		if rs.refs != nil {
			c.set(string(gwv1.RouteConditionResolvedRefs), false, rs.refs.reason, rs.refs.msg)
		} else {
			c.set(string(gwv1.RouteConditionResolvedRefs), true, string(gwv1.RouteReasonResolvedRefs), "all references resolved")
		}
		if len(rs.dropped) > 0 && !allDropped && c.isTrue(string(gwv1.RouteConditionAccepted)) {
			c.set(string(gwv1.RouteConditionPartiallyInvalid), true, string(gwv1.RouteReasonUnsupportedValue), "Dropped Rule(s): "+joinLimited(rs.dropped))
		}
		if c.isTrue(string(gwv1.RouteConditionAccepted)) {
			if status, reason, msg, ok := dnsCondition(t.tunnelOf(pi.gw), pi, t.dnsLeft); ok {
				c.setStatus(RouteConditionDNSRecords, status, reason, msg)
			}
		}
		if ps := protectors[pi]; len(ps) > 0 {
			c.set(ConditionAccessPolicyAffected, true, reasonAccessProtected, protectedMessage(ps))
		}
		t.warnOnChange(r.kind, r.meta, c.prev, c.list)
		fresh = fresh || c.fresh()
		out = append(out, gwv1.RouteParentStatus{ParentRef: pi.ref, ControllerName: gwv1.GatewayController(t.in.ControllerName), Conditions: c.list})
	}
	return out, fresh
}

// joinLimited joins problems for a condition message, keeping it short
// enough to read in kubectl describe.
func joinLimited(list []string) string { return joinFirst(list, "; ", "; and ") }

// joinFirst joins the first five of list with sep, then says how many
// more there are after more: joinFirst(list, ", ", " and ") is "a, b, c,
// d, e and 2 more".
func joinFirst(list []string, sep, more string) string {
	const max = 5
	if len(list) <= max {
		return strings.Join(list, sep)
	}
	return strings.Join(list[:max], sep) + more + strconv.Itoa(len(list)-max) + " more"
}

func prevParentConds(list []gwv1.RouteParentStatus, ref *gwv1.ParentReference, controller string) []metav1.Condition {
	for i := range list {
		p := &list[i]
		if string(p.ControllerName) == controller && SameParentRef(&p.ParentRef, ref) {
			return p.Conditions
		}
	}
	return nil
}

// SameParentRef reports whether a and b name the same parent, field by
// field (no reflection: routes are the many objects).
func SameParentRef(a, b *gwv1.ParentReference) bool {
	return a.Name == b.Name && ptrEq(a.Namespace, b.Namespace) && ptrEq(a.SectionName, b.SectionName) &&
		ptrEq(a.Port, b.Port) && ptrEq(a.Kind, b.Kind) && ptrEq(a.Group, b.Group)
}

// countAttached adds an accepted route to the attachedRoutes of every
// listener that takes it (once per listener), and records its public
// hostnames.
func (t *translator) countAttached(r *routeInfo) {
	var buf [4]*listenerInfo
	counted := buf[:0] // the listeners counted so far; few, so on the stack
	for _, pi := range r.parents {
		if !pi.accepted() {
			continue
		}
		for _, li := range pi.counts {
			if !slices.Contains(counted, li) {
				counted = append(counted, li)
				li.attached++
			}
		}
		if streamKind(r.kind) {
			continue // a stream route's hostnames need its origin port: streamHostnames
		}
		for _, a := range pi.attachments {
			if a.lostTo == "" {
				t.noteHostnames(a, r.kind == kindGRPCRoute)
			}
		}
	}
}

// noteHostnames records the public hostnames an attachment serves, for
// its Gateway's plane or its class's tunnel, or both when the shared
// proxies relay to the plane. An attachment that takes any host
// publishes the listener's hostname; a listener without one has nothing
// to publish.
func (t *translator) noteHostnames(a *attachment, grpc bool) {
	hosts := a.held()
	class := ""
	if gi := a.listener.gw; gi != nil && gi.class != nil {
		if gi.onPlane() {
			t.planeHostnames(gi, hosts, grpc)
			if !gi.relayed() {
				return
			}
		}
		class = gi.class.obj.Name
	}
	for _, h := range hosts {
		t.hostNeeds(h, class, grpc)
	}
}

func (t *translator) hostNeeds(h, class string, grpc bool) {
	i, ok := t.hostIndex[h]
	if !ok {
		i = len(t.out.Hostnames)
		t.hostIndex[h] = i
		t.out.Hostnames = append(t.out.Hostnames, Hostname{Name: h})
	}
	if hn := &t.out.Hostnames[i]; class != "" && !slices.Contains(hn.Classes, class) {
		hn.Classes = append(hn.Classes, class)
		slices.Sort(hn.Classes)
	}
	if grpc {
		t.out.Hostnames[i].GRPC = true
	} else {
		t.out.Hostnames[i].HTTP = true
	}
}

// statusAddresses are the addresses of an accepted Gateway's status, but
// for the one of the address pool.
func (t *translator) statusAddresses(gi *gatewayInfo, ts *TunnelState) []gwv1.GatewayStatusAddress {
	if gi.onPlane() && t.in.Provisioning == ProvisionPlanes {
		return t.planeAddresses(gi, ts)
	}
	return gatewayAddresses(ts, t.in.Addresses)
}

// gatewayStatuses writes Gateway and ListenerSet statuses once routes have
// been counted.
func (t *translator) gatewayStatuses() {
	for _, gi := range t.gatewayList {
		st := &gwv1.GatewayStatus{}
		t.accessGatewayConditions(gi)
		t.lbGatewayCondition(gi)
		t.dnsGatewayCondition(gi)
		for _, li := range gi.own {
			st.Listeners = append(st.Listeners, listenerStatus(li))
		}
		ts := t.tunnelOf(gi)
		switch {
		case gi.accepted && gi.addressReason != "":
			st.Addresses = t.statusAddresses(gi, ts)
			gi.conds.set(string(gwv1.GatewayConditionProgrammed), false, gi.addressReason, gi.addressMsg)
		case gi.accepted && gi.moving:
			st.Addresses = gatewayAddresses(ts, t.in.Addresses)
			_, _, wait := t.planeProgrammed(gi, t.planeTunnel(gi))
			gi.conds.set(string(gwv1.GatewayConditionProgrammed), true, string(gwv1.GatewayReasonProgrammed),
				"the shared proxies serve this gateway through its class's tunnel until its own data plane is ready: "+wait)
			gi.conds.set(GatewayConditionDataPlane, true, DataPlaneMoving,
				"served by the shared proxies until a proxy of its own data plane is ready")
			t.ownTunnelCondition(gi)
		case gi.accepted && gi.dedicated && t.in.Provisioning == ProvisionPlanes:
			st.Addresses = t.statusAddresses(gi, ts)
			ok, reason, msg := t.planeProgrammed(gi, ts)
			gi.conds.set(string(gwv1.GatewayConditionProgrammed), ok, reason, msg)
			gi.conds.set(GatewayConditionDataPlane, true, DataPlaneDedicated, "served by its own data plane")
			t.ownTunnelCondition(gi)
			t.warnOnPlaneChange(gi, ok, reason, msg)
		case gi.accepted && ts != nil && ts.Pending != "":
			st.Addresses = gatewayAddresses(ts, t.in.Addresses)
			gi.conds.set(string(gwv1.GatewayConditionProgrammed), false, string(gwv1.GatewayReasonPending), ts.Pending)
		case gi.accepted:
			st.Addresses = t.statusAddresses(gi, ts)
			msg := "the proxies serve this gateway"
			if ts != nil {
				msg = "the proxies serve this gateway and the tunnel routes its hostnames to them"
			}
			gi.conds.set(string(gwv1.GatewayConditionProgrammed), true, string(gwv1.GatewayReasonProgrammed), msg)
		default:
			gi.conds.set(string(gwv1.GatewayConditionProgrammed), false, string(gwv1.GatewayReasonInvalid), "not served: see Accepted")
		}
		if gi.accepted && gi.address.IsValid() {
			r := gwv1.GatewayAddressRoutabilityDefault
			if t.clusterAddress(gi) {
				r = gwv1.GatewayAddressRoutabilityCluster // the plane's Service takes it as its ClusterIP
			}
			st.Addresses = append([]gwv1.GatewayStatusAddress{{Type: new(gwv1.IPAddressType), Value: gi.address.String(), Routability: routability(r)}}, st.Addresses...)
		}
		if gi.accepted {
			st.Addresses = t.finishAddresses(gi, st.Addresses)
			t.addressesAssigned(gi, st.Addresses)
		}
		keepTunnelRecord(gi)
		n := int32(0)
		for _, si := range gi.sets {
			if si.conds.isTrue(string(gwv1.ListenerSetConditionAccepted)) {
				n++
			}
		}
		if gi.obj.Spec.AllowedListeners != nil {
			st.AttachedListenerSets = &n
		}
		st.Conditions = withForeign(gi.conds.list, gi.conds.prev, gatewayConditionTypes)
		t.warnOnChange("Gateway", &gi.obj.ObjectMeta, gi.conds.prev, gi.conds.list)
		t.out.Gateways[gi.key] = st
	}
	for _, si := range t.setList {
		st := &gwv1.ListenerSetStatus{Conditions: withForeign(si.conds.list, si.conds.prev, gatewayConditionTypes)}
		for _, li := range si.listeners {
			st.Listeners = append(st.Listeners, gwv1.ListenerEntryStatus(listenerStatus(li)))
		}
		t.out.ListenerSets[si.key] = st
	}
}

func listenerStatus(li *listenerInfo) gwv1.ListenerStatus {
	switch {
	case li.serves():
		li.conds.set(string(gwv1.ListenerConditionProgrammed), true, string(gwv1.ListenerReasonProgrammed), "listener served")
	case li.conflict != "":
		li.conds.set(string(gwv1.ListenerConditionProgrammed), false, li.conflict, "not served: see Conflicted")
	default:
		li.conds.set(string(gwv1.ListenerConditionProgrammed), false, string(gwv1.ListenerReasonInvalid), "not served: see Accepted and ResolvedRefs")
	}
	kinds := li.kinds
	if kinds == nil || li.conflict == string(gwv1.ListenerReasonProtocolConflict) {
		// A listener its port's protocols leave unserved supports no
		// kind, as the conformance suite asks
		// (TLSRouteListenerMixedTerminationNotSupported); routes still
		// count as attached.
		kinds = []gwv1.RouteGroupKind{}
	}
	return gwv1.ListenerStatus{Name: gwv1.SectionName(li.name), SupportedKinds: kinds, AttachedRoutes: li.attached,
		Conditions: withForeign(li.conds.list, li.conds.prev, listenerConditionTypes)}
}

// assembleConfig adds the served listeners and the clusters that served
// routes use, in a stable order.
func (t *translator) assembleConfig() {
	cfg := &t.out.Config
	for _, li := range t.listenerOrder {
		if li.serves() && li.gw.accepted {
			l := proxycfg.Listener{Name: li.dpName, Hostname: li.distinctHost(), Port: int(li.port), Protocol: string(li.protocol),
				ClientValidation: li.clientValidation, HealthCheck: t.lbHealth[li]}
			if p := li.gw.params; p != nil {
				l.EncodedSlashes = p.Spec.EncodedSlashes
			}
			if li.gw.address.IsValid() {
				l.Address = li.gw.address.String()
			}
			// An HTTPS listener's certificates go where the proxies
			// terminate TLS themselves: on a Gateway address, or on the
			// listener ports of a plane that serves in the cluster.
			// Through a tunnel, the edge does. A TLS listener of mode
			// Terminate always carries them: the edge relays its streams
			// as bytes, and the proxy terminates them on every socket.
			if li.gw.address.IsValid() || li.gw.servesInCluster() || li.terminate {
				l.Certificates = li.certs
			}
			cfg.Listeners = append(cfg.Listeners, l)
		}
	}
	used := make(map[string]bool, len(t.clusters))
	for i := range cfg.Routes {
		for j := range cfg.Routes[i].Rules {
			for name := range cfg.Routes[i].Rules[j].Clusters {
				used[name] = true
			}
		}
	}
	cfg.Clusters = make([]proxycfg.Cluster, 0, len(used))
	for _, c := range t.clusters {
		if used[c.Name] {
			cfg.Clusters = append(cfg.Clusters, c)
			used[c.Name] = false // once: remembered routes bring their clusters again
		}
	}
	cfg.AccessTeams = accessTeams(cfg.Routes, t.in.AccessKeys)
	slices.SortFunc(t.out.Hostnames, func(a, b Hostname) int { return strings.Compare(a.Name, b.Name) })
	t.assemblePlanes()
	t.markUnmanaged()
}

// warnOnChange records a Warning event for each condition that has just
// turned False (or changed its reason while False), so kubectl get events
// shows what broke and when, once.
func (t *translator) warnOnChange(kind string, meta *metav1.ObjectMeta, prev, now []metav1.Condition) {
	for _, c := range now {
		if c.Status != metav1.ConditionFalse || c.Type == string(gwv1.ListenerConditionConflicted) || c.Type == string(gwv1.GatewayConditionProgrammed) {
			continue
		}
		if p := findCond(prev, c.Type); p != nil && p.Status == c.Status && p.Reason == c.Reason {
			continue
		}
		t.out.Events = append(t.out.Events, Event{Kind: kind, Namespace: meta.Namespace, Name: meta.Name,
			Type: "Warning", Reason: c.Reason, Message: c.Type + ": " + c.Message})
	}
}
