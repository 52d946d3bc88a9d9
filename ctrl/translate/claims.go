// This file settles hostnames claimed through more than one tunnel.

package translate

import (
	"fmt"
	"slices"
	"strings"
)

// Hostname claims. A public hostname's DNS record points at one tunnel.
// When routes publish one hostname through different tunnels whose DNS
// tunnelgate manages (two classes' tunnels, a class's and a plane's, two
// planes'), the oldest claim wins: the tunnel of the oldest route that
// publishes it, by creation time, then namespace and name, the order
// route conflicts are settled in. Only that tunnel publishes the hostname
// (its ingress document and its DNS record); the other routes keep their
// attachment and say, on their parent status, which route holds the
// hostname (RouteConditionDNSRecords, DNSReasonClaimedEarlier).
//
// The decision is a function of the objects alone, so every sync and every
// controller replica makes the same, and a record never changes hands
// between two tunnels that both want it. A route claims a hostname once
// it is attached; whether its rules are valid is not looked at, so a
// claim does not come and go as a route is edited.
//
// A tunnel whose DNS tunnelgate does not manage (dns.enabled off, or the
// hostname outside its dns.zones) makes no claim: whoever manages that DNS
// decides where the hostname points.

// DNSReasonClaimedEarlier is the DNS condition's reason on a route whose
// hostname an older route publishes through another tunnel.
const DNSReasonClaimedEarlier = "ClaimedByOlderRoute"

// lostClaim is a hostname an attachment does not publish, and the claim
// that holds it.
type lostClaim struct {
	host, winner string
}

// hostClaim is one attachment's claim on a hostname through a tunnel.
type hostClaim struct {
	a      *attachment
	tunnel string // an Input.Tunnels key
}

// settleClaims decides every contested hostname. routes are oldest first,
// as attach saw them.
func (t *translator) settleClaims(routes []pending) {
	byHost := map[string][]hostClaim{}
	var hosts []string
	for _, p := range routes {
		for _, pi := range p.info.parents {
			if !pi.accepted() {
				continue
			}
			for _, a := range pi.attachments {
				if a.lostTo != "" {
					continue
				}
				for _, h := range a.published() {
					tunnel, ok := t.claimingTunnel(a.listener.gw, h)
					if !ok {
						continue
					}
					if _, seen := byHost[h]; !seen {
						hosts = append(hosts, h)
					}
					byHost[h] = append(byHost[h], hostClaim{a: a, tunnel: tunnel})
				}
			}
		}
	}
	for _, h := range hosts {
		claims := byHost[h]
		first := claims[0]
		for _, c := range claims[1:] {
			if c.tunnel != first.tunnel {
				c.a.lost = append(c.a.lost, lostClaim{host: h, winner: describeClaim(first)})
			}
		}
	}
}

// claimingTunnel is the tunnel through which a Gateway publishes host with
// DNS tunnelgate manages, if any: its own when it is served by its plane,
// else its class's.
func (t *translator) claimingTunnel(gi *gatewayInfo, host string) (string, bool) {
	if gi == nil || gi.class == nil || gi.class.config == nil {
		return "", false
	}
	spec := &gi.class.config.Spec
	if spec.DNS == nil || !spec.DNS.Enabled || !inZones(host, spec.DNS.Zones) {
		return "", false
	}
	switch {
	case gi.ownTunnel():
		return PlaneTunnelKey(gi.class.obj.Name, gi.key), true
	case gi.onPlane() && !gi.relayed():
		return "", false // its plane serves in the cluster
	case spec.Tunnel != nil:
		return gi.class.obj.Name, true
	}
	return "", false
}

// inZones reports whether host is in one of zones, or zones is empty (every
// zone the account's token can edit).
func inZones(host string, zones []string) bool {
	if len(zones) == 0 {
		return true
	}
	return slices.ContainsFunc(zones, func(z string) bool {
		z = strings.ToLower(strings.TrimSuffix(z, "."))
		return host == z || strings.HasSuffix(host, "."+z)
	})
}

// describeClaim names a winning claim for the losers' conditions.
func describeClaim(c hostClaim) string {
	r, gw := c.a.route, c.a.listener.gw
	through := fmt.Sprintf("GatewayClass %s's tunnel", gw.class.obj.Name)
	if gw.ownTunnel() {
		through = "its own tunnel"
	}
	return fmt.Sprintf("%s %s/%s, through Gateway %s/%s (%s)", r.kind, r.meta.Namespace, r.meta.Name, gw.obj.Namespace, gw.obj.Name, through)
}

// held are the public hostnames an attachment publishes: published()
// less those lost to older claims through other tunnels.
func (a *attachment) held() []string {
	hosts := a.published()
	if len(a.lost) == 0 {
		return hosts
	}
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if !slices.ContainsFunc(a.lost, func(l lostClaim) bool { return l.host == h }) {
			out = append(out, h)
		}
	}
	return out
}
