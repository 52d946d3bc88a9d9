// This file decides who serves a Gateway with a dedicated plane, and its
// plane's config.

package translate

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A Gateway whose GatewayConfig asks for a Dedicated data plane is
// translated as every other Gateway is, into the one Config, and is
// listed in Output.Planes with its listeners and hostnames. ProxyConfigs
// then cuts the Config along Gateways: a plane's proxies are handed its
// listeners, the routes bound to them and the clusters those routes use,
// and nothing of any other Gateway; the shared proxies are handed the
// rest. The cut is made after translation, so translation, the Cache and
// its patches know nothing of planes.

// Provisioning says who serves a Gateway that asks for a Dedicated plane.
type Provisioning int

const (
	// ServeDedicatedHere: the process that translates serves every Gateway
	// (standalone mode). A Dedicated Gateway is checked as the controller
	// would and listed in Planes, and served like any other.
	ServeDedicatedHere Provisioning = iota
	// ProvisionPlanes: the controller runs a plane per Dedicated Gateway;
	// Input.Planes holds what their Deployments say, which decides the
	// Gateway's Programmed condition.
	ProvisionPlanes
	// NoPlanes: the controller runs no planes (started without -planes),
	// so a Dedicated Gateway is refused, saying so.
	NoPlanes
)

// Plane is a Gateway served by a data plane of its own.
type Plane struct {
	Gateway *gwv1.Gateway
	Params  *v1alpha1.GatewayConfig
	// Moving is set while the Gateway moves onto its plane from the shared
	// proxies: they serve it still, through its class's tunnel, until its
	// plane has a ready proxy. Its listeners are then in both configs,
	// and its hostnames the class's.
	Moving bool
	// Listeners are the data-plane names (proxycfg.Listener.Name) of its
	// served listeners, its own and its ListenerSets'.
	Listeners []string
	// Hostnames are its public hostnames, sorted: its tunnel's.
	Hostnames []Hostname
	// Ports are its served listeners' ports, each once, sorted: those its
	// Service exposes when it serves in the cluster.
	Ports []PlanePort
	// Address, when valid, is the Gateway's address from the address pool
	// (Input.AddressPool), which its Service takes as its ClusterIP.
	Address netip.Addr
	// Relay, for a plane the shared proxies relay to (GatewayConfig
	// classTunnel), is how they reach it, once its state says
	// (PlaneState.Relay). ProxyConfigs gives the shared proxies a relay
	// for its hostnames, and nothing else of it.
	Relay *Relay
}

// Relay is how the shared proxies reach the proxies of a plane that
// takes its requests through them: over TLS, checking the plane's
// certificate against a CA of that plane alone and presenting a client
// certificate of the same CA, which the plane's proxies require.
type Relay struct {
	// Endpoints are its ready proxies' relay listeners, "ip:port", sorted.
	Endpoints []string
	// ServerName is the name its certificate is checked for.
	ServerName                         string
	CAPEM, ClientCertPEM, ClientKeyPEM string
}

func (r *Relay) equal(o *Relay) bool {
	if r == nil || o == nil {
		return r == o
	}
	return slices.Equal(r.Endpoints, o.Endpoints) && r.ServerName == o.ServerName && r.CAPEM == o.CAPEM &&
		r.ClientCertPEM == o.ClientCertPEM && r.ClientKeyPEM == o.ClientKeyPEM
}

// PlanePort is a listener port of a plane and its listeners' protocol.
type PlanePort struct {
	Port     int32
	Protocol gwv1.ProtocolType
}

// PlaneState is what a Gateway's plane reports of its proxies. Like a
// TunnelState, the Cache compares it by value (Equal).
type PlaneState struct {
	// Replicas is how many proxies the plane wants, Ready how many are
	// ready (a config loaded, the tunnel connected).
	Replicas, Ready int32
	// Problem is why proxies are missing, when the cluster says: a quota
	// refusing Pods, an image that cannot be pulled, a container that
	// keeps crashing, a rollout past its deadline.
	Problem string
	// NoResources marks a Problem of capacity (a quota, no node), which
	// the Gateway API names NoResources; others are Pending.
	NoResources bool
	// ServiceIP is the ClusterIP of the plane's Service, once it has one:
	// the Gateway's address when its plane serves in the cluster.
	ServiceIP string
	// Relay, for a plane the shared proxies relay to, is how they reach
	// it, once its credentials are written.
	Relay *Relay
}

// Equal says whether two states say the same.
func (s *PlaneState) Equal(o *PlaneState) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Replicas == o.Replicas && s.Ready == o.Ready && s.Problem == o.Problem && s.NoResources == o.NoResources &&
		s.ServiceIP == o.ServiceIP && s.Relay.equal(o.Relay)
}

// planeProgrammed decides a dedicated Gateway's Programmed condition: its
// plane has a ready proxy and, when it has a tunnel of its own, that
// tunnel routes its hostnames.
func (t *translator) planeProgrammed(gi *gatewayInfo, ts *TunnelState) (ok bool, reason, msg string) {
	ps := t.in.Planes[gi.key]
	inCluster, relayed := gi.servesInCluster(), gi.params.Spec.Relayed()
	through := "the Gateway's own tunnel"
	if relayed {
		through = "its class's tunnel"
	}
	switch {
	case gi.params.Spec.InClusterOnly():
	case ts == nil:
		return false, string(gwv1.GatewayReasonPending), "waiting for " + through
	case ts.Problem != "" && ts.NoResources:
		return false, string(gwv1.GatewayReasonNoResources), through + ": " + ts.Problem
	case ts.Problem != "":
		return false, string(gwv1.GatewayReasonInvalid), through + ": " + ts.Problem
	case ts.Pending != "":
		return false, string(gwv1.GatewayReasonPending), ts.Pending
	}
	switch {
	case ps == nil:
		return false, string(gwv1.GatewayReasonPending), "waiting for the Deployment of the Gateway's data plane"
	case ps.Ready == 0:
		reason, msg = string(gwv1.GatewayReasonPending), fmt.Sprintf("0 of %d proxies of the Gateway's data plane are ready", ps.Replicas)
		if ps.Problem != "" {
			msg += ": " + ps.Problem
		}
		if ps.NoResources {
			reason = string(gwv1.GatewayReasonNoResources)
		}
		return false, reason, msg
	case inCluster && ps.ServiceIP == "":
		return false, string(gwv1.GatewayReasonPending), "waiting for the Service of the Gateway's data plane"
	case relayed && ps.Relay == nil:
		msg = "waiting for the relay credentials of the Gateway's data plane"
		if ps.Problem != "" {
			msg += ": " + ps.Problem
		}
		return false, string(gwv1.GatewayReasonPending), msg
	}
	switch {
	case gi.params.Spec.InClusterOnly():
		msg = fmt.Sprintf("%d of %d proxies of the Gateway's data plane are ready, serving in the cluster on its Service", ps.Ready, ps.Replicas)
	case relayed:
		msg = fmt.Sprintf("%d of %d proxies of the Gateway's data plane are ready; its class's tunnel routes its hostnames to the shared proxies, which relay them to the plane",
			ps.Ready, ps.Replicas)
	default:
		msg = fmt.Sprintf("%d of %d proxies of the Gateway's data plane are ready and its tunnel routes its hostnames to them", ps.Ready, ps.Replicas)
	}
	if inCluster && !gi.params.Spec.InClusterOnly() {
		msg += "; they also serve in the cluster on its Service"
	}
	if ps.Problem != "" {
		msg += "; " + ps.Problem
	}
	return true, string(gwv1.GatewayReasonProgrammed), msg
}

// onPlane says whether the Gateway's own plane serves it now: it asks for
// one and is not still moving onto it.
func (gi *gatewayInfo) onPlane() bool { return gi.dedicated && !gi.moving }

// ownTunnel says whether the Gateway's own plane serves it now, through a
// tunnel of the Gateway's own.
func (gi *gatewayInfo) ownTunnel() bool { return gi.onPlane() && gi.params.Spec.Tunnel != nil }

// relayed says whether the Gateway's own plane serves it now, with the
// requests the shared proxies take from the class's tunnel and relay.
func (gi *gatewayInfo) relayed() bool { return gi.onPlane() && gi.params.Spec.Relayed() }

// servesInCluster says whether the Gateway's own plane serves its listener
// ports in the cluster, terminating TLS there.
func (gi *gatewayInfo) servesInCluster() bool {
	return gi.dedicated && gi.params.Spec.ServesInCluster()
}

// refuseHeldPorts refuses the listeners of a Gateway whose plane serves
// in the cluster that ask for a port its Pods already hold
// (GatewayConfigSpec.PortHolder): that listener could not be served there.
func refuseHeldPorts(gi *gatewayInfo) {
	for _, li := range gi.listeners {
		holder := gi.params.Spec.PortHolder(li.port)
		if holder == "" || !li.attachable {
			continue
		}
		li.attachable = false
		li.conds.set(string(gwv1.ListenerConditionAccepted), false, string(gwv1.ListenerReasonPortUnavailable),
			fmt.Sprintf("port %d is %s in the Pods of the Gateway's data plane, which serves its listeners on their own ports in the cluster: choose another port", li.port, holder))
	}
}

// planeAddresses are a dedicated Gateway's addresses: its tunnel's
// hostname (its own or, relayed, its class's), then, serving in the
// cluster, its Service's ClusterIP (unless it has an address of the pool,
// which its Service then takes, and which gatewayStatuses puts first).
// The shared proxies' addresses (Input.Addresses) are not its.
func (t *translator) planeAddresses(gi *gatewayInfo, ts *TunnelState) []gwv1.GatewayStatusAddress {
	addrs := gatewayAddresses(ts, nil)
	if !gi.servesInCluster() {
		return addrs
	}
	if gi.params.Spec.InClusterOnly() {
		addrs = nil
	}
	if ps := t.in.Planes[gi.key]; ps != nil && ps.ServiceIP != "" && !gi.address.IsValid() {
		addrs = append(addrs, gwv1.GatewayStatusAddress{Type: new(gwv1.IPAddressType), Value: ps.ServiceIP,
			Routability: routability(gwv1.GatewayAddressRoutabilityCluster)})
	}
	return addrs
}

// warnOnPlaneChange records a Warning event on a dedicated Gateway whose
// plane has no ready proxy for a reason the cluster gives (an image, a
// quota, a crash), or whose tunnel Cloudflare refuses, once per new
// message: Programmed is otherwise left out
// of events, as it is False for a moment at every start.
func (t *translator) warnOnPlaneChange(gi *gatewayInfo, ok bool, reason, msg string) {
	ps, ts := t.in.Planes[gi.key], t.tunnelOf(gi)
	if ok || ((ps == nil || ps.Problem == "") && (ts == nil || ts.Problem == "")) {
		return
	}
	if p := findCond(gi.conds.prev, string(gwv1.GatewayConditionProgrammed)); p != nil && p.Status == metav1.ConditionFalse && p.Message == msg {
		return
	}
	t.out.Events = append(t.out.Events, Event{Kind: "Gateway", Namespace: gi.obj.Namespace, Name: gi.obj.Name,
		Type: "Warning", Reason: reason, Message: "Programmed: " + msg})
}

// planeHostnames records hostnames a dedicated Gateway serves, for its own
// tunnel rather than its class's.
func (t *translator) planeHostnames(gi *gatewayInfo, hosts []string, grpc bool) {
	p := t.plane(gi)
	for _, h := range hosts {
		i := slices.IndexFunc(p.Hostnames, func(x Hostname) bool { return x.Name == h })
		if i < 0 {
			i = len(p.Hostnames)
			p.Hostnames = append(p.Hostnames, Hostname{Name: h})
		}
		if grpc {
			p.Hostnames[i].GRPC = true
		} else {
			p.Hostnames[i].HTTP = true
		}
	}
}

// plane is gi's entry in Output.Planes, made at the first use.
func (t *translator) plane(gi *gatewayInfo) *Plane {
	if t.out.Planes == nil {
		t.out.Planes = map[types.NamespacedName]*Plane{}
	}
	p := t.out.Planes[gi.key]
	if p == nil {
		p = &Plane{Gateway: gi.obj, Params: gi.params, Moving: gi.moving}
		t.out.Planes[gi.key] = p
	}
	return p
}

// GatewayConditionDataPlane says, on a Gateway that asks for a plane of
// its own, what serves it: its plane (reason DataPlaneDedicated), or,
// while it moves onto its plane, the shared proxies (DataPlaneMoving).
const (
	GatewayConditionDataPlane = "tunnelgate.dev/DataPlane"
	DataPlaneDedicated        = "Dedicated"
	DataPlaneMoving           = "MovingFromSharedProxies"
)

// movingToPlane reports whether a dedicated Gateway is still to be served
// by the shared proxies: the controller runs planes, this Gateway's has
// no ready proxy yet, and until now the shared proxies served it. That is
// read from the Gateway's own status, so every controller replica decides
// alike: it was moving already, or it was Programmed without a
// DataPlane condition (on the shared proxies). A Gateway new to the
// cluster is not moving: the shared proxies never hold its config.
func (t *translator) movingToPlane(gi *gatewayInfo) bool {
	if t.in.Provisioning != ProvisionPlanes {
		return false
	}
	if ps := t.in.Planes[gi.key]; ps != nil && ps.Ready > 0 {
		return false
	}
	prev := gi.conds.prev
	if dp := findCond(prev, GatewayConditionDataPlane); dp != nil {
		return dp.Reason == DataPlaneMoving
	}
	p := findCond(prev, string(gwv1.GatewayConditionProgrammed))
	return p != nil && p.Status == metav1.ConditionTrue
}

// assemblePlanes lists every accepted dedicated Gateway, with its served
// listeners, once the config's listeners are known.
func (t *translator) assemblePlanes() {
	for _, gi := range t.gatewayList {
		if gi.accepted && gi.dedicated {
			p := t.plane(gi)
			p.Address = gi.address
			if ps := t.in.Planes[gi.key]; gi.params.Spec.Relayed() && ps != nil {
				p.Relay = ps.Relay
			}
		}
	}
	for _, li := range t.listenerOrder {
		if li.serves() && li.gw.accepted && li.gw.dedicated {
			p := t.plane(li.gw)
			p.Listeners = append(p.Listeners, li.dpName)
			if !slices.ContainsFunc(p.Ports, func(x PlanePort) bool { return x.Port == li.port }) {
				p.Ports = append(p.Ports, PlanePort{Port: li.port, Protocol: li.protocol})
			}
		}
	}
	for _, p := range t.out.Planes {
		slices.SortFunc(p.Hostnames, func(a, b Hostname) int { return strings.Compare(a.Name, b.Name) })
		slices.SortFunc(p.Ports, func(a, b PlanePort) int { return int(a.Port - b.Port) })
	}
}

// ProxyConfigs cuts Config into the shared proxies' config and each
// plane's (proxycfg.Config.Split), and gives the shared proxies the
// relays to the planes they relay to (relay.go). A route bound to
// listeners of several Gateways is in each of their configs, bound there
// to that config's listeners only, and each config holds the clusters and
// Access teams of its routes. Without planes, shared is &o.Config itself.
// Neither is to be modified: they share Config's parts.
func (o *Output) ProxyConfigs() (shared *proxycfg.Config, planes map[types.NamespacedName]*proxycfg.Config) {
	if len(o.Planes) == 0 {
		return &o.Config, nil
	}
	// Part 0 is the shared proxies'; part i+1 is the plane keys[i]'s.
	keys := slices.SortedFunc(maps.Keys(o.Planes), compareKeys)
	partsOf := map[string][]int{} // listener name → the parts that serve it
	for i, key := range keys {
		p := o.Planes[key]
		for _, l := range p.Listeners {
			partsOf[l] = []int{i + 1}
			if p.Moving { // the shared proxies serve it too
				partsOf[l] = []int{0, i + 1}
			}
		}
	}
	shared0 := []int{0}
	parts := o.Config.Split(len(keys)+1, func(listener string) []int {
		if ps, ok := partsOf[listener]; ok {
			return ps
		}
		return shared0
	})
	planes = make(map[types.NamespacedName]*proxycfg.Config, len(keys))
	for i, key := range keys {
		planes[key] = parts[i+1]
	}
	shared = parts[0]
	o.addRelays(shared)
	return shared, planes
}
