package translate

import (
	"cmp"
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
// A Gateway left without one (the pool is exhausted) is not Programmed,
// reason AddressNotAssigned.

// assignAddresses sets gi.address on the accepted Gateways.
func (t *translator) assignAddresses() {
	pool := t.in.AddressPool
	if !pool.IsValid() {
		return
	}
	pool = pool.Masked()
	gws := slices.Clone(t.gatewayList)
	slices.SortStableFunc(gws, func(a, b *gatewayInfo) int {
		if c := a.obj.CreationTimestamp.Compare(b.obj.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	taken := map[netip.Addr]bool{}
	var want []*gatewayInfo
	for _, gi := range gws {
		if !gi.accepted {
			continue
		}
		if a, ok := statusAddress(gi.obj, pool); ok && !taken[a] {
			gi.address, taken[a] = a, true
			continue
		}
		want = append(want, gi)
	}
	next := pool.Addr().Next() // never the network address
	for _, gi := range want {
		for next.IsValid() && pool.Contains(next) && (taken[next] || isBroadcast(next, pool)) {
			next = next.Next()
		}
		if !next.IsValid() || !pool.Contains(next) {
			return // exhausted: the rest stay without an address
		}
		gi.address, taken[next] = next, true
	}
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
		ip = ip.Unmap()
		if pool.Contains(ip) && ip != pool.Addr() && !isBroadcast(ip, pool) {
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
