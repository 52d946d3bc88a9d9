// This file implements Gateway addresses and the clusters that serve them.

package translate

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Gateway addresses. With an AddressPool, every accepted Gateway gets an
// IP address of its own, so that Gateways which all listen on port 80
// without hostnames (as the conformance suite's do) are told apart by
// address, as a load balancer per Gateway would. The choice is a pure
// function of the objects, so every controller replica makes the same:
//
//   - Gateways are taken oldest first (then by namespace and name);
//   - each keeps the pool address its status already shows, unless an
//     older Gateway holds it;
//   - the others get the lowest free address of the pool (its network
//     address and, for IPv4, the broadcast address are never given).
//
// A Gateway may ask for an address in spec.addresses: an IPAddress with a
// value (a static address) or without one (any address of the pool). A
// static address must be in the pool, and an older Gateway's static
// address is never given to a younger one; static addresses are placed
// before the others, so a Gateway asking for an address another holds
// only from the pool gets it. A Gateway has one address.
//
// A Gateway whose own data plane serves it through a tunnel only gets no
// address: nothing would listen on it.
//
// A Gateway left without the address it needs is not Programmed: reason
// AddressNotUsable for a static address that cannot be had,
// AddressNotAssigned when the pool is exhausted or there is none.

// Routability (GEP-5093, Gateway API v1.7). Every address on a Gateway's
// status says where it can be reached from:
//
//   - Cluster: a ClusterIP. The address of a Gateway whose own data plane
//     serves it in the cluster, which the plane's Service takes (a pool
//     address, or the ClusterIP Kubernetes gave it); an address of
//     Input.Addresses marked so (the chart's in-cluster Service name).
//   - "" (no portable guarantee): the tunnel's hostname, reached from the
//     internet through Cloudflare's edge at the hostnames routes publish;
//     a pool address the shared proxies serve; standalone's listen address.
//
// A Gateway may ask for a routability in spec.addresses:
//
//   - "" or none: any address, as before;
//   - Cluster: a ClusterIP, which only a Gateway whose own data plane
//     serves it in the cluster gets: its pool address or, without a pool
//     and a value, its Service's ClusterIP;
//   - testing.x-k8s.io/sentinel, which the conformance suite reserves:
//     like "", and reported as asked;
//   - any other: not supported, so the entry cannot be satisfied
//     (AddressNotAssigned).
//
// With spec.addresses, the status lists the address given for it and no
// other, as the GEP asks. AddressesAssigned says whether it was given:
// True once it is (or when nothing was asked), False (NotAssigned) when
// it cannot be; left out while a Cluster address waits for the plane's
// Service. Routability is written only where the installed CRDs have the
// field (v1.7 on): CRDs of v1.6 would prune it, and every sync would try
// again.

// routabilitySentinel is the routability the conformance suite reserves
// for itself; an implementation of GatewayAddressRoutability supports and
// reports it.
const routabilitySentinel gwv1.GatewayAddressRoutabilityType = "testing.x-k8s.io/sentinel"

// requestedRoutability is the routability spec.addresses asks for (a
// Gateway has one address).
func requestedRoutability(g *gwv1.Gateway) gwv1.GatewayAddressRoutabilityType {
	if len(g.Spec.Addresses) == 0 {
		return ""
	}
	return g.Spec.Addresses[0].Routability
}

// clusterAddress says whether the address a Gateway gets is a ClusterIP:
// its own data plane serves it in the cluster, through a Service.
func (t *translator) clusterAddress(gi *gatewayInfo) bool {
	return gi.onPlane() && gi.servesInCluster() && t.in.Provisioning == ProvisionPlanes
}

// unsatisfiedRoutability says why the routability a Gateway asks for
// cannot be had, or "".
func (t *translator) unsatisfiedRoutability(gi *gatewayInfo) string {
	switch r := requestedRoutability(gi.obj); r {
	case gwv1.GatewayAddressRoutabilityDefault, routabilitySentinel:
		return ""
	case gwv1.GatewayAddressRoutabilityCluster:
		if gi.dedicated && gi.servesInCluster() && t.in.Provisioning == ProvisionPlanes {
			return ""
		}
		return "spec.addresses asks for routability Cluster, a ClusterIP: only a Gateway whose own data plane serves it in the cluster " +
			"(a GatewayConfig with dataPlane Dedicated and serveInCluster) gets one, its plane's Service's"
	default:
		return fmt.Sprintf("spec.addresses asks for routability %q, which tunnelgate does not support: ask for Cluster, or leave it empty", r)
	}
}

// clusterFromService says whether a Gateway's address is to be its plane
// Service's ClusterIP, given by Kubernetes: it asks for routability
// Cluster and no value, and there is no pool to give one from.
func (t *translator) clusterFromService(gi *gatewayInfo) bool {
	return !t.in.AddressPool.IsValid() && len(gi.obj.Spec.Addresses) == 1 && !isStatic(gi.obj) &&
		requestedRoutability(gi.obj) == gwv1.GatewayAddressRoutabilityCluster && t.clusterAddress(gi)
}

// routabilityWritten says whether the installed CRDs keep status
// addresses' routability: every bundle from v1.7 on, and standalone mode.
func (t *translator) routabilityWritten() bool {
	return !strings.HasPrefix(t.in.BundleVersion, olderBundle+".")
}

// finishAddresses makes an accepted Gateway's status addresses what the
// GEP asks: with spec.addresses, only the address given for it, reported
// with the routability asked for when that is the sentinel; routability
// left out where the CRDs would drop it.
func (t *translator) finishAddresses(gi *gatewayInfo, addrs []gwv1.GatewayStatusAddress) []gwv1.GatewayStatusAddress {
	if len(gi.obj.Spec.Addresses) > 0 {
		asked := requestedRoutability(gi.obj)
		var kept []gwv1.GatewayStatusAddress
		for _, a := range addrs {
			if a.Type == nil || *a.Type != gwv1.IPAddressType {
				continue
			}
			given := gi.address.IsValid() && a.Value == gi.address.String() ||
				!gi.address.IsValid() && t.clusterFromService(gi) && a.Routability != nil && *a.Routability == gwv1.GatewayAddressRoutabilityCluster
			if !given {
				continue
			}
			if asked == routabilitySentinel {
				a.Routability = new(routabilitySentinel)
			}
			kept = append(kept, a)
			break
		}
		addrs = kept
	}
	if !t.routabilityWritten() {
		for i := range addrs {
			addrs[i].Routability = nil
		}
	}
	return addrs
}

// addressesAssigned sets a Gateway's AddressesAssigned condition.
func (t *translator) addressesAssigned(gi *gatewayInfo, addrs []gwv1.GatewayStatusAddress) {
	typ := string(gwv1.GatewayConditionAddressesAssigned)
	switch {
	case gi.addressReason != "":
		gi.conds.set(typ, false, string(gwv1.GatewayReasonAddressesNotAssigned), gi.addressMsg)
	case t.clusterFromService(gi) && len(addrs) == 0:
		// Kubernetes has not given the plane's Service its ClusterIP yet.
	case len(gi.obj.Spec.Addresses) == 0:
		gi.conds.set(typ, true, string(gwv1.GatewayReasonAddressesAssigned), "the Gateway has its default addresses")
	default:
		gi.conds.set(typ, true, string(gwv1.GatewayReasonAddressesAssigned), "the address spec.addresses asks for is assigned")
	}
}

// routability returns r as a status address's routability.
func routability(r gwv1.GatewayAddressRoutabilityType) *gwv1.GatewayAddressRoutabilityType { return &r }

// unsupportedAddress says why a Gateway's spec.addresses cannot be
// accepted at all (UnsupportedAddress), or "".
func unsupportedAddress(g *gwv1.Gateway) string {
	for _, a := range g.Spec.Addresses {
		if a.Type != nil && *a.Type != gwv1.IPAddressType {
			return fmt.Sprintf("spec.addresses: type %s is not supported: a Gateway gets an IPAddress from the controller's address pool", *a.Type)
		}
		if _, err := netip.ParseAddr(a.Value); a.Value != "" && err != nil {
			return fmt.Sprintf("spec.addresses: %q is not an IP address", a.Value)
		}
	}
	return ""
}

// staticAddress is the IP address a Gateway asks for by value, if any.
func staticAddress(g *gwv1.Gateway) (netip.Addr, bool) {
	for _, a := range g.Spec.Addresses {
		if ip, err := netip.ParseAddr(a.Value); err == nil {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// assignAddresses sets gi.address on the accepted Gateways, or why they
// have none.
func (t *translator) assignAddresses() {
	for _, gi := range t.gatewayList {
		if msg := t.unsatisfiedRoutability(gi); gi.accepted && msg != "" {
			gi.addressReason = string(gwv1.GatewayReasonAddressNotAssigned)
			gi.addressMsg = msg
		}
	}
	pool := t.in.AddressPool
	if !pool.IsValid() {
		for _, gi := range t.gatewayList {
			switch {
			case !gi.accepted || len(gi.obj.Spec.Addresses) == 0 || gi.addressReason != "" || t.clusterFromService(gi):
			case isStatic(gi.obj):
				gi.addressReason = string(gwv1.GatewayReasonAddressNotUsable)
				gi.addressMsg = "spec.addresses asks for an IP address, and the controller has no address pool (-gateway-address-pool) to give it from"
			default:
				gi.addressReason = string(gwv1.GatewayReasonAddressNotAssigned)
				gi.addressMsg = "spec.addresses asks for an IP address, and the controller has no address pool (-gateway-address-pool)"
			}
		}
		return
	}
	pool = pool.Masked()
	for _, gi := range t.gatewayList {
		if gi.accepted && tunnelOnlyPlane(gi) && len(gi.obj.Spec.Addresses) > 0 && gi.addressReason == "" {
			gi.addressReason = string(gwv1.GatewayReasonAddressNotUsable)
			gi.addressMsg = "spec.addresses asks for an IP address, and the Gateway's data plane serves it through a tunnel only: " +
				"set serveInCluster on its GatewayConfig to serve it in the cluster at an address"
		}
	}
	gws := slices.Clone(t.gatewayList)
	slices.SortStableFunc(gws, func(a, b *gatewayInfo) int {
		if c := a.obj.CreationTimestamp.Compare(b.obj.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	taken := map[netip.Addr]*gatewayInfo{}
	gws = slices.DeleteFunc(gws, func(gi *gatewayInfo) bool { return !gi.accepted || tunnelOnlyPlane(gi) })
	for _, gi := range gws {
		if gi.addressReason != "" {
			continue
		}
		if len(gi.obj.Spec.Addresses) > 1 {
			gi.addressReason = string(gwv1.GatewayReasonAddressNotUsable)
			gi.addressMsg = fmt.Sprintf("spec.addresses lists %d addresses; a Gateway gets one", len(gi.obj.Spec.Addresses))
			continue
		}
		a, ok := staticAddress(gi.obj)
		switch {
		case !ok:
			continue
		case !usable(a, pool):
			gi.addressReason = string(gwv1.GatewayReasonAddressNotUsable)
			gi.addressMsg = fmt.Sprintf("spec.addresses: %s is not a usable address of the pool %s", a, pool)
		case taken[a] != nil:
			gi.addressReason = string(gwv1.GatewayReasonAddressNotUsable)
			gi.addressMsg = fmt.Sprintf("spec.addresses: %s is in use by the older Gateway %s", a, taken[a].key)
		default:
			gi.address, taken[a] = a, gi
		}
	}
	var want []*gatewayInfo
	for _, gi := range gws {
		if gi.address.IsValid() || gi.addressReason != "" {
			continue
		}
		if a, ok := statusAddress(gi.obj, pool); ok && taken[a] == nil {
			gi.address, taken[a] = a, gi
			continue
		}
		want = append(want, gi)
	}
	next := pool.Addr().Next() // never the network address
	for _, gi := range want {
		for next.IsValid() && pool.Contains(next) && (taken[next] != nil || isBroadcast(next, pool)) {
			next = next.Next()
		}
		if !next.IsValid() || !pool.Contains(next) {
			gi.addressReason = string(gwv1.GatewayReasonAddressNotAssigned)
			gi.addressMsg = "no free address in the pool " + pool.String()
			continue
		}
		gi.address, taken[next] = next, gi
	}
}

// tunnelOnlyPlane says whether a Gateway's own plane serves it through a
// tunnel alone, listening on no address in the cluster: it gets none of
// the pool.
func tunnelOnlyPlane(gi *gatewayInfo) bool { return gi.dedicated && !gi.servesInCluster() }

func isStatic(g *gwv1.Gateway) bool { _, ok := staticAddress(g); return ok }

// usable says whether a is an address of pool the controller may give.
func usable(a netip.Addr, pool netip.Prefix) bool {
	return pool.Contains(a) && a != pool.Addr() && !isBroadcast(a, pool)
}

// statusAddress is the first IP address of the Gateway's status that is
// usable in pool.
func statusAddress(gw *gwv1.Gateway, pool netip.Prefix) (netip.Addr, bool) {
	for _, a := range gw.Status.Addresses {
		if a.Type != nil && *a.Type != gwv1.IPAddressType {
			continue
		}
		ip, err := netip.ParseAddr(a.Value)
		if err != nil {
			continue
		}
		if ip = ip.Unmap(); usable(ip, pool) {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// isBroadcast says whether a is the last address of an IPv4 pool.
func isBroadcast(a netip.Addr, pool netip.Prefix) bool {
	if !a.Is4() || pool.Bits() >= 31 {
		return false
	}
	b := a.As4()
	host := 32 - pool.Bits()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	mask := uint32(1)<<host - 1
	return v&mask == mask
}
