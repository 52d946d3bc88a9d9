package translate

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

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
	pool := t.in.AddressPool
	if !pool.IsValid() {
		for _, gi := range t.gatewayList {
			switch {
			case !gi.accepted || len(gi.obj.Spec.Addresses) == 0:
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
		if gi.accepted && tunnelOnlyPlane(gi) && len(gi.obj.Spec.Addresses) > 0 {
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
