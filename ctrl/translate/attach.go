// This file attaches routes to their parents.

package translate

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// routeInfo is what attachment needs of a route of any kind.
type routeInfo struct {
	kind       string // HTTPRoute, GRPCRoute, TCPRoute or TLSRoute
	meta       *metav1.ObjectMeta
	parentRefs []gwv1.ParentReference
	hostnames  []gwv1.Hostname
	prev       []gwv1.RouteParentStatus
	parents    []*parentInfo
	// problem says why a stream route's rules cannot be served
	// (streamRules); originPort is its origin port (originports.go).
	problem    string
	originPort int
	// portNote says why a stream route that a tunnel would carry has no
	// origin port.
	portNote string
}

// parentInfo is one parentRef of a route that names a Gateway (or a
// ListenerSet) of ours, and how attaching to it went.
type parentInfo struct {
	ref gwv1.ParentReference
	gw  *gatewayInfo
	// attachments are the listeners the route serves on through this ref.
	attachments []*attachment
	// counts are the listeners whose attachedRoutes count the route if it
	// ends up accepted: allowed by allowedRoutes, hostnames intersecting,
	// whether or not the listener itself is valid.
	counts []*listenerInfo
	// reason and msg explain Accepted=False; empty when accepted.
	reason, msg string
}

// attachment is a route served on one listener for some hostnames.
type attachment struct {
	route    *routeInfo
	listener *listenerInfo
	// hosts are the hostnames served; nil means any host the listener takes.
	hosts []string
	// lostTo names the route that won a HTTPRoute/GRPCRoute hostname
	// conflict on this listener.
	lostTo string
	// shadowedBy names the older TCPRoute that a TCP listener relays
	// every connection to (tcpConflicts).
	shadowedBy string
	// lost are the public hostnames older claims hold through other
	// tunnels (claims.go).
	lost []lostClaim
}

// routerHosts are the hostnames the router files an attachment's rules
// under: the route's own hostnames that meet the listener's, as the route
// wrote them rather than narrowed to the listener's, and none (any host)
// for a route without hostnames. The proxy picks a request's listener by
// its host first and matches routes only within it, so these serve the
// same requests as the intersections (hosts) do; but ranked by them, a
// route written for the exact host beats one written for a wildcard on
// the same listener, whatever their paths, and one without hostnames
// comes last: precedence by the route's original hostnames, as the
// Gateway API asks since v1.7 (GatewayRouteHostnameIntersectionPrecedence).
// nil means any host the listener takes.
func (a *attachment) routerHosts() []string {
	if a.hosts == nil || len(a.route.hostnames) == 0 {
		return nil
	}
	out := make([]string, 0, len(a.route.hostnames))
	for _, h := range a.route.hostnames {
		rh := strings.ToLower(string(h))
		if _, ok := intersectHost(a.listener.hostname, rh); a.listener.hostname == "" || ok {
			out = append(out, rh)
		}
	}
	return out
}

// published are the public hostnames an attachment serves: its own, or,
// when it takes any host, the listener's public one (none when it has
// none). A stream route publishes only through a
// tunnel (its origin port), and not on a listener whose connections an
// older route takes.
func (a *attachment) published() []string {
	if a.shadowedBy != "" || streamKind(a.route.kind) && a.route.originPort == 0 {
		return nil
	}
	if h := a.listener.public(); a.hosts == nil && h != "" {
		return []string{h}
	}
	return a.hosts
}

// public is the hostname a listener publishes routes that take any host
// under: its hostname, or a TCP listener's publicHost.
func (li *listenerInfo) public() string {
	if li.protocol == gwv1.TCPProtocolType {
		return li.publicHost
	}
	return li.hostname
}

// attach binds a route to the listeners its parentRefs select, counting
// attachedRoutes, and records why a parentRef fails.
func (t *translator) attach(r *routeInfo) {
	badHost := ""
	for _, h := range r.hostnames {
		if !validHostname(string(h)) {
			badHost = string(h)
			break
		}
	}
	for _, ref := range r.parentRefs {
		group, kind := groupGateway, "Gateway"
		if ref.Group != nil {
			group = string(*ref.Group)
		}
		if ref.Kind != nil {
			kind = string(*ref.Kind)
		}
		ns := r.meta.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		if group != groupGateway {
			continue
		}
		var gw *gatewayInfo
		var cands []*listenerInfo
		switch kind {
		case "Gateway":
			if gw = t.gatewayByKey[nn(ns, string(ref.Name))]; gw != nil {
				cands = gw.own
			}
		case "ListenerSet":
			if si := t.setByKey[nn(ns, string(ref.Name))]; si != nil {
				gw, cands = si.gw, si.listeners
				if !si.conds.isTrue(string(gwv1.ListenerSetConditionAccepted)) {
					pi := &parentInfo{ref: ref, gw: gw, reason: string(gwv1.RouteReasonNoMatchingParent),
						msg: fmt.Sprintf("ListenerSet %s/%s is not accepted by its Gateway", ns, ref.Name)}
					r.parents = append(r.parents, pi)
					continue
				}
			}
		}
		if gw == nil {
			continue // another controller's parent, or none at all
		}
		pi := t.parents.next()
		pi.ref, pi.gw = ref, gw
		r.parents = append(r.parents, pi)
		if badHost != "" {
			pi.reason = string(gwv1.RouteReasonUnsupportedValue)
			pi.msg = fmt.Sprintf("hostname %q is not a valid DNS name or wildcard", badHost)
			continue
		}

		var selected []*listenerInfo
		for _, li := range cands {
			if ref.SectionName != nil && string(*ref.SectionName) != li.name {
				continue
			}
			if ref.Port != nil && int32(*ref.Port) != li.port {
				continue
			}
			selected = append(selected, li)
		}
		if len(selected) == 0 {
			pi.reason = string(gwv1.RouteReasonNoMatchingParent)
			pi.msg = fmt.Sprintf("%s %s/%s has no listener matching%s", kind, ns, ref.Name, refSelector(ref))
			continue
		}
		if !gw.accepted {
			pi.reason = string(gwv1.RouteReasonNoMatchingParent)
			pi.msg = fmt.Sprintf("Gateway %s is not accepted", gw.key)
			continue
		}
		if msg := t.grpcThroughTunnel(r, gw); msg != "" {
			pi.reason = string(gwv1.RouteReasonUnsupportedProtocol)
			pi.msg = msg
			continue
		}
		allowed, hostMatch := 0, 0
		for _, li := range selected {
			if !li.allows(r.kind, r.meta.Namespace, t.look) {
				continue
			}
			hosts, ok := intersectHostnames(li.hostname, r.hostnames)
			if ok {
				pi.counts = append(pi.counts, li)
			}
			if !li.attachable {
				continue
			}
			allowed++
			if !ok {
				continue
			}
			hostMatch++
			if li.serves() {
				a := t.attachmentSlab.next()
				a.route, a.listener, a.hosts = r, li, hosts
				pi.attachments = append(pi.attachments, a)
				t.attachments[li] = append(t.attachments[li], a)
			}
		}
		switch {
		case allowed == 0:
			pi.reason = string(gwv1.RouteReasonNotAllowedByListeners)
			pi.msg = fmt.Sprintf("no listener of %s %s/%s%s allows a %s from namespace %s", kind, ns, ref.Name, refSelector(ref), r.kind, r.meta.Namespace)
		case hostMatch == 0:
			pi.reason = string(gwv1.RouteReasonNoMatchingListenerHostname)
			pi.msg = fmt.Sprintf("no hostname of the route matches a listener hostname of %s %s/%s%s", kind, ns, ref.Name, refSelector(ref))
		}
	}
}

func refSelector(ref gwv1.ParentReference) string {
	var b strings.Builder
	if ref.SectionName != nil {
		fmt.Fprintf(&b, " sectionName %s", *ref.SectionName)
	}
	if ref.Port != nil {
		fmt.Fprintf(&b, " port %d", *ref.Port)
	}
	return b.String()
}

// intersectHostnames returns the hostnames a route serves on a listener.
// nil with ok means any host the listener takes; !ok means none.
func intersectHostnames(listener string, route []gwv1.Hostname) ([]string, bool) {
	if len(route) == 0 {
		if listener == "" {
			return nil, true
		}
		return []string{listener}, true
	}
	var out []string
	for _, h := range route {
		rh := strings.ToLower(string(h))
		if listener == "" {
			out = append(out, rh)
		} else if x, ok := intersectHost(listener, rh); ok {
			out = append(out, x)
		}
	}
	return out, len(out) > 0
}

// intersectHost returns the more specific of two hostnames when one
// includes the other. A wildcard "*.example.com" takes one or more labels
// in front of example.com, never example.com itself.
func intersectHost(a, b string) (string, bool) {
	if a == b {
		return a, true
	}
	aw, bw := strings.HasPrefix(a, "*."), strings.HasPrefix(b, "*.")
	switch {
	case aw && coveredBy(b, a):
		return b, true
	case bw && coveredBy(a, b):
		return a, true
	}
	return "", false
}

// coveredBy reports whether host (exact or wildcard) falls under wildcard.
func coveredBy(host, wildcard string) bool {
	suffix := wildcard[1:] // ".example.com"
	if !strings.HasSuffix(host, suffix) || len(host) <= len(suffix) {
		return false
	}
	return !strings.HasPrefix(host, "*.") || len(host) > len(wildcard)
}

// hostsOverlap reports whether two attachments' hostnames share a host.
func hostsOverlap(a, b []string) bool {
	if a == nil || b == nil {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if _, ok := intersectHost(x, y); ok {
				return true
			}
		}
	}
	return false
}

// kindConflicts settles HTTPRoute against GRPCRoute on one listener: when
// their hostnames meet, only the older route (then the first by
// namespace/name) keeps the listener, as the GRPCRoute spec requires.
func (t *translator) kindConflicts() {
	for _, li := range t.listenerOrder {
		as := t.attachments[li]
		var http, grpc []*attachment
		for _, a := range as {
			switch a.route.kind {
			case kindGRPCRoute:
				grpc = append(grpc, a)
			case kindHTTPRoute:
				http = append(http, a)
			}
		}
		if len(http) == 0 || len(grpc) == 0 {
			continue
		}
		for _, g := range grpc {
			for _, h := range http {
				if h.lostTo != "" || g.lostTo != "" || !hostsOverlap(g.hosts, h.hosts) {
					continue
				}
				if olderThan(g.route.meta, h.route.meta) {
					h.lostTo = kindGRPCRoute + " " + g.route.meta.Namespace + "/" + g.route.meta.Name
				} else {
					g.lostTo = kindHTTPRoute + " " + h.route.meta.Namespace + "/" + h.route.meta.Name
				}
			}
		}
	}
}

// accepted reports whether a parentRef attached the route somewhere, and
// fills in the reason when every attachment lost a conflict.
func (p *parentInfo) accepted() bool {
	if p.reason != "" {
		return false
	}
	if len(p.attachments) == 0 {
		return true // attached, but the listener is not served (its refs are broken)
	}
	for _, a := range p.attachments {
		if a.lostTo == "" {
			return true
		}
	}
	p.reason = "Conflicted"
	p.msg = "the hostnames are served by the older " + p.attachments[0].lostTo + " on every listener"
	return false
}

// slab hands out zeroed values 256 to an allocation instead of one each,
// for the working state every route needs once per translation.
type slab[T any] struct{ free []T }

func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.free = make([]T, 256)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}
