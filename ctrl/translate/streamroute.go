// This file translates TCPRoutes and TLSRoutes: stream routes.

package translate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Stream routes. A TCPRoute or TLSRoute relays whole connections: it
// attaches like an HTTPRoute (parentRefs, sectionName and port,
// allowedRoutes, supportedKinds; a TLSRoute's hostnames meet the
// listener's as an HTTPRoute's do, and a TCPRoute has none), to
// listeners of protocol TCP (TCPRoutes) and TLS (TLSRoutes) only, and
// becomes one proxycfg.Route with one rule of backends and nothing else
// (proxycfg.Route's doc):
//
//   - Its one rule: the CRD asks for exactly one; a route with none or
//     more is not Accepted (UnsupportedValue) and not served.
//   - Backends: Services, ServiceImports and ExternalBackends as for
//     HTTP (ReferenceGrant, weights), each port resolved to a cluster of
//     protocol tcp of its own (named "+tcp", so it never meets the HTTP
//     cluster of the same port); a ref that does not resolve sets
//     ResolvedRefs False with the spec's reason and refuses its share of
//     connections (a BackendRef with a Status).
//   - Re-encryption: on a TLS listener of mode Terminate the proxy
//     terminates the client's TLS, so the BackendTLSPolicy of a backend
//     applies as for HTTP (backendtls.go): its cluster ("+tcp+tls")
//     carries the policy's TLS settings and the Gateway's backend client
//     certificate, and the policy has the Gateway for an ancestor. On a
//     Passthrough listener, and for a TCPRoute, the connection's TLS is
//     the client's: no policy applies, and none has the Gateway for an
//     ancestor. A TLSRoute on listeners of both modes names the
//     re-encrypting cluster; the proxy relays passthrough connections
//     to it as bytes (proxycfg.Cluster's TLS doc).
//   - A TCP listener relays to one route: of the TCPRoutes on it, the
//     oldest takes every connection. The others stay Accepted and
//     counted in attachedRoutes, as the conformance suite asks, and their
//     Accepted message names the route that serves the listener.
//   - Through a tunnel, each route has an origin port of its own
//     (originports.go) and its public hostnames (a TLSRoute's, after
//     intersection; a TCPRoute's listener's) are carried by the tunnel
//     as a StreamService (streamHostnames). A hostname is one ingress
//     rule, so one kind of service: where HTTP routes and stream routes
//     publish one hostname through the tunnels, the older claim holds it
//     (settleStreamClaims).
const (
	kindTCPRoute = "TCPRoute"
	kindTLSRoute = "TLSRoute"
)

// streamKind reports whether routes of kind are stream routes.
func streamKind(kind string) bool { return proxycfg.RouteKind(kind).Stream() }

// streamRules are a stream route's rules: their backendRefs, or what is
// wrong with their number.
func streamRules(p pending) ([]gwv1.BackendRef, string) {
	var kind string
	var refs [][]gwv1.BackendRef
	if p.tcp != nil {
		kind = kindTCPRoute
		for i := range p.tcp.Spec.Rules {
			refs = append(refs, p.tcp.Spec.Rules[i].BackendRefs)
		}
	} else {
		kind = kindTLSRoute
		for i := range p.tls.Spec.Rules {
			refs = append(refs, p.tls.Spec.Rules[i].BackendRefs)
		}
	}
	switch {
	case len(refs) != 1:
		return nil, fmt.Sprintf("spec.rules: a %s has exactly one rule, this one has %d; it is not served until it has one", kind, len(refs))
	case len(refs[0]) == 0:
		return nil, "spec.rules[0].backendRefs: the rule needs at least one backendRef; the route is not served until it has one"
	}
	return refs[0], ""
}

// tcpConflicts leaves each TCP listener to its oldest TCPRoute: the
// others' attachments there are shadowed. Attachments are oldest first.
func (t *translator) tcpConflicts() {
	for _, li := range t.listenerOrder {
		if li.protocol != gwv1.TCPProtocolType {
			continue
		}
		var first *attachment
		for _, a := range t.attachments[li] {
			switch {
			case a.lostTo != "" || a.route.problem != "":
			case first == nil:
				first = a
			default:
				a.shadowedBy = describeRoute(first.route)
			}
		}
	}
}

// describeRoute names a route in messages: "TCPRoute ns/name".
func describeRoute(r *routeInfo) string { return r.kind + " " + r.meta.Namespace + "/" + r.meta.Name }

// acceptNotes are what an accepted parent's Accepted message adds for a
// stream route: the listeners on which an older TCPRoute takes the
// connections, and why a route is not served through the tunnel.
func (r *routeInfo) acceptNotes(p *parentInfo) []string {
	var notes []string
	for _, a := range p.attachments {
		if a.shadowedBy != "" {
			notes = append(notes, fmt.Sprintf("listener %s relays every connection to the older %s", a.listener.name, a.shadowedBy))
		}
	}
	if r.portNote != "" {
		notes = append(notes, r.portNote)
	}
	return notes
}

// joinNotes is msg with notes after it.
func joinNotes(msg string, notes []string) string {
	if len(notes) == 0 {
		return msg
	}
	return msg + "; " + strings.Join(notes, "; ")
}

// streamResult translates one stream route into the config and its
// statuses, and publishes its hostnames. Stream routes are translated
// anew every time: the Cache keeps nothing of them (cache.go).
func (t *translator) streamResult(p pending) {
	r := p.info
	if len(r.parents) == 0 {
		return // no parent of ours
	}
	rule := ""
	if r.problem == "" {
		rule = ruleNames(p)[0]
	}
	served, protectors := t.streamServed(r, rule)
	var rs ruleSet
	rs.unsupported = r.problem
	var scheme string
	if r.problem == "" {
		route := proxycfg.Route{Kind: proxycfg.RouteKind(r.kind), Namespace: r.meta.Namespace, Name: r.meta.Name,
			Created: r.meta.CreationTimestamp.Time.UTC(), OriginPort: r.originPort}
		route.Listeners, route.Hostnames = servedOn(served)
		var out proxycfg.Rule
		out, scheme = t.streamRule(p, &rs, terminatingGateways(served))
		route.Rules = []proxycfg.Rule{out}
		if len(route.Listeners) > 0 {
			t.out.Config.Routes = append(t.out.Config.Routes, route)
		}
	}
	statuses, _ := t.routeStatus(r, &rs, false, protectors)
	key := nn(r.meta.Namespace, r.meta.Name)
	if r.kind == kindTCPRoute {
		t.out.TCPRoutes[key] = statuses
	} else {
		t.out.TLSRoutes[key] = statuses
	}
	if r.problem != "" {
		return
	}
	t.countAttached(r)
	if r.originPort != 0 {
		t.streamHostnames(r, rule, StreamService{Route: describeRoute(r), Port: r.originPort, Scheme: scheme})
	}
}

// servedThrough yields the attachments a stream route is served through
// (of accepted parents, neither lost nor shadowed), each with its parent.
func (r *routeInfo) servedThrough(yield func(*parentInfo, *attachment) bool) {
	for _, pi := range r.parents {
		if !pi.accepted() {
			continue
		}
		for _, a := range pi.attachments {
			if a.lostTo == "" && a.shadowedBy == "" && !yield(pi, a) {
				return
			}
		}
	}
}

// streamServed are the attachments a stream route is served through
// (servedThrough), and the policies protecting its rule (named rule)
// there, per parent.
func (t *translator) streamServed(r *routeInfo, rule string) (served []*attachment, protectors map[*parentInfo][]*accessInfo) {
	for pi, a := range r.servedThrough {
		served = append(served, a)
		if ai := t.streamAccess(r, a, rule); ai != nil && !slices.Contains(protectors[pi], ai) {
			if protectors == nil {
				protectors = map[*parentInfo][]*accessInfo{}
			}
			protectors[pi] = append(protectors[pi], ai)
		}
	}
	return served, protectors
}

// terminatingGateways are the Gateways, without repeats, whose listeners
// of mode Terminate serve a stream route through the attachments served.
func terminatingGateways(served []*attachment) []*gatewayInfo {
	var gws []*gatewayInfo
	for _, a := range served {
		if a.listener.terminate && !slices.Contains(gws, a.listener.gw) {
			gws = append(gws, a.listener.gw)
		}
	}
	return gws
}

// streamRule translates a stream route's one rule: its backends, each
// resolved or refusing its share, with their problems in rs; and the
// tunnel scheme they ask for (streamScheme). terminating are the Gateways
// terminating the route's connections (terminatingGateways): when there
// are any, its backends' BackendTLSPolicies apply and have those Gateways
// for ancestors.
func (t *translator) streamRule(p pending, rs *ruleSet, terminating []*gatewayInfo) (proxycfg.Rule, string) {
	refs, _ := streamRules(p)
	out := proxycfg.Rule{Backends: make([]proxycfg.BackendRef, 0, len(refs))}
	var schemes []string
	for i := range refs {
		b, scheme := t.streamBackend(p.info, &refs[i], rs, terminating)
		out.Backends = append(out.Backends, b)
		if b.Status == 0 && b.Weight > 0 {
			schemes = append(schemes, scheme)
		}
	}
	return out, streamScheme(schemes)
}

// streamBackend resolves one backendRef of a stream route, and the
// tunnel scheme its Service port asks for (streamScheme). The first of
// the terminating Gateways lends the cluster its backend client
// certificate; each becomes an ancestor of the policies met.
func (t *translator) streamBackend(r *routeInfo, ref *gwv1.BackendRef, rs *ruleSet, terminating []*gatewayInfo) (proxycfg.BackendRef, string) {
	w := 1
	if ref.Weight != nil {
		w = int(*ref.Weight)
	}
	name, p := t.backendRefOf(r.kind, r.meta.Namespace, &ref.BackendObjectReference, false, len(terminating) > 0, terminating)
	if p != nil {
		rs.refProblem(p)
		return proxycfg.BackendRef{Weight: w, Status: failClosed}, ""
	}
	return proxycfg.BackendRef{Cluster: name, Weight: w}, t.clusterSchemes[name]
}

// Tunnel service schemes for a stream route (StreamService.Scheme).
const (
	schemeTCP = "tcp"
	schemeSSH = "ssh"
	schemeRDP = "rdp"
)

// streamScheme is the scheme of a stream route's hostnames' ingress rules
// (StreamService.Scheme): "ssh" when every backend that takes
// connections is a Service port of appProtocol ssh, "rdp" likewise for
// rdp, else "tcp". cloudflared carries each as bytes to the origin port;
// the scheme names the service for what Cloudflare offers per protocol
// (an Access application's browser rendering of SSH or RDP, say).
func streamScheme(schemes []string) string {
	if len(schemes) == 0 {
		return schemeTCP
	}
	for _, s := range []string{schemeSSH, schemeRDP} {
		if !slices.ContainsFunc(schemes, func(x string) bool { return x != s }) {
			return s
		}
	}
	return schemeTCP
}

// portScheme is the scheme a Service port's appProtocol asks of the
// tunnel (streamScheme).
func portScheme(sp *corev1.ServicePort) string {
	if sp == nil || sp.AppProtocol == nil {
		return schemeTCP
	}
	switch p := strings.ToLower(*sp.AppProtocol); p {
	case schemeSSH, schemeRDP:
		return p
	}
	return schemeTCP
}

// streamHostnames records the public hostnames a stream route serves
// through its tunnels, each carried as base with the Access of the
// policy protecting its rule (named rule) there: those its attachments
// hold (published, less those an older claim holds: claims.go,
// settleStreamClaims), for its Gateway's plane or its class's tunnel.
// Where that policy
// cannot be applied yet, nothing is published (streamaccess.go).
func (t *translator) streamHostnames(r *routeInfo, rule string, base StreamService) {
	for _, pi := range r.parents {
		if !pi.accepted() {
			continue
		}
		for _, a := range pi.attachments {
			if a.lostTo != "" || !t.streamTunnel(a.listener.gw) {
				continue
			}
			access, ok := tunnelAccess(t.streamAccess(r, a, rule))
			if !ok {
				continue
			}
			svc := base
			svc.Access = access
			gi := a.listener.gw
			for _, h := range a.held() {
				if gi.onPlane() {
					t.planeStreamHostname(gi, h, &svc)
				} else {
					t.streamHostNeeds(h, gi.class.obj.Name, &svc)
				}
			}
		}
	}
}

// streamHostNeeds is hostNeeds for a stream route's hostname. The first
// route to record a hostname keeps it (settleStreamClaims made it the
// only one where it could matter).
func (t *translator) streamHostNeeds(h, class string, svc *StreamService) {
	i, ok := t.hostIndex[h]
	if !ok {
		i = len(t.out.Hostnames)
		t.hostIndex[h] = i
		t.out.Hostnames = append(t.out.Hostnames, Hostname{Name: h})
	}
	hn := &t.out.Hostnames[i]
	if !slices.Contains(hn.Classes, class) {
		hn.Classes = append(hn.Classes, class)
		slices.Sort(hn.Classes)
	}
	if hn.Stream == nil && !hn.HTTP && !hn.GRPC {
		hn.Stream = svc
	}
}

// planeStreamHostname is streamHostNeeds for a Gateway's own plane.
func (t *translator) planeStreamHostname(gi *gatewayInfo, h string, svc *StreamService) {
	p := t.plane(gi)
	i := slices.IndexFunc(p.Hostnames, func(x Hostname) bool { return x.Name == h })
	if i < 0 {
		i = len(p.Hostnames)
		p.Hostnames = append(p.Hostnames, Hostname{Name: h})
	}
	if hn := &p.Hostnames[i]; hn.Stream == nil && !hn.HTTP && !hn.GRPC {
		hn.Stream = svc
	}
}

// streamTunnel reports whether a Gateway's streams are served through a
// tunnel now: its plane's own, or its class's (a GatewayClassConfig with
// a tunnel, or a tunnel the Cloudflare sync reports). Only then do its
// stream routes get origin ports and public hostnames. A plane the
// shared proxies relay to has none for streams: they relay HTTP alone
// (relay.go).
func (t *translator) streamTunnel(gi *gatewayInfo) bool {
	switch {
	case gi == nil || gi.class == nil:
		return false
	case gi.onPlane():
		return gi.ownTunnel()
	}
	if c := gi.class.config; c != nil && c.Spec.Tunnel != nil {
		return true
	}
	return t.in.Tunnels[gi.class.obj.Name] != nil
}

// settleStreamClaims settles public hostnames that HTTP routes and stream
// routes both publish through tunnels, and those two stream routes do: a
// hostname is one ingress rule, which carries HTTP or one stream route,
// not both. The oldest claim holds it, as for claims through different
// tunnels (claims.go): when a stream route's, every other route loses
// the hostname; when an HTTP route's, the stream routes do. A loser keeps
// its attachment and says which route holds the hostname on its DNS
// condition (DNSReasonClaimedEarlier). routes are oldest first.
func (t *translator) settleStreamClaims(routes []pending) {
	if !slices.ContainsFunc(routes, func(p pending) bool { return p.stream() && p.info.originPort != 0 }) {
		return // nothing to settle: HTTP routes share hostnames freely
	}
	type claim struct {
		a      *attachment
		stream bool
	}
	byHost := map[string][]claim{}
	var hosts []string
	for _, p := range routes {
		r := p.info
		stream := streamKind(r.kind)
		if stream && r.originPort == 0 {
			continue // not through a tunnel
		}
		for _, pi := range r.parents {
			if !pi.accepted() {
				continue
			}
			for _, a := range pi.attachments {
				if a.lostTo != "" || stream && !t.streamTunnel(a.listener.gw) || !stream && (a.listener.gw == nil || a.listener.gw.class == nil) {
					continue
				}
				for _, h := range a.held() {
					if _, seen := byHost[h]; !seen {
						hosts = append(hosts, h)
					}
					byHost[h] = append(byHost[h], claim{a, stream})
				}
			}
		}
	}
	for _, h := range hosts {
		claims := byHost[h]
		first := claims[0]
		for _, c := range claims[1:] {
			if c.a.route != first.a.route && (first.stream || c.stream) {
				c.a.lost = append(c.a.lost, lostClaim{host: h, winner: describeClaim(hostClaim{a: first.a})})
			}
		}
	}
}
