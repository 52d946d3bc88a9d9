// This file implements the origin ports of stream routes through tunnels.

package translate

import (
	"fmt"
	"hash/fnv"

	"github.com/tunnelgate/tunnelgate/api/origin"
)

// Origin ports. cloudflared hands an origin a stream's bytes alone, with
// no hostname, so every stream route served through a tunnel has a port
// of its own beside the proxy's origin listeners (proxycfg.Route's
// OriginPort), among origin.StreamPortCount ports from
// origin.DefaultStreamPortBase, and the tunnel's ingress rule for each
// of its hostnames names that port (StreamService.Port).
//
// A port is a function of the route's identity, so that it stays put
// while other routes come and go, and the tunnel's ingress document and
// the proxies' sockets change only for the route that changed: the
// route's kind, namespace and name hash to a slot (FNV-1a), and when
// routes collide the older (by creation time, then namespace and name,
// as route conflicts are settled) keeps the slot and the younger takes
// the next free one, and so on around the range. A route's port
// therefore moves only when a route that collided with it, and is older,
// comes or goes. Routes beyond the range's size get none, and are not
// served through the tunnel; nor are routes without a public hostname
// (throughTunnel), which need no port.

// originPorts gives each stream route served through a tunnel its port.
// routes are oldest first.
func (t *translator) originPorts(routes []pending) {
	var ids []string
	var infos []*routeInfo
	for _, p := range routes {
		r := p.info
		if !p.stream() || r.problem != "" {
			continue
		}
		switch tunnel, public, relayed := t.throughTunnel(r); {
		case public:
			ids = append(ids, r.kind+"/"+r.meta.Namespace+"/"+r.meta.Name)
			infos = append(infos, r)
		case tunnel:
			r.portNote = "served in the cluster only: it has no hostname to publish through the tunnel " + noHostnameHint(r.kind)
		case relayed:
			r.portNote = "served in the cluster only: the shared proxies relay HTTP to the Gateway's own data plane, not streams (a GatewayConfig with a tunnel of its own carries them)"
		}
	}
	for i, port := range allocatePorts(ids, origin.DefaultStreamPortBase, origin.StreamPortCount) {
		infos[i].originPort = port
		if port == 0 {
			infos[i].portNote = fmt.Sprintf("not served through the tunnel: the %d origin ports for stream routes are taken by older routes", origin.StreamPortCount)
		}
	}
}

// noHostnameHint says where a stream route of kind gets a public
// hostname from.
func noHostnameHint(kind string) string {
	if kind == kindTCPRoute {
		return "(a TCPRoute's is its TCP listener's, which the " + AnnotationTCPHostnames + " annotation of the listener's Gateway or ListenerSet gives)"
	}
	return "(a TLSRoute's are its hostnames, or its listener's)"
}

// throughTunnel reports whether a stream route is served (accepted on a
// listener, not shadowed) on a Gateway served through a tunnel
// (streamTunnel), and whether it has a public hostname there: only then
// is it served through the tunnel. A TCPRoute's public hostname is its
// listener's (tcphostnames.go); a TLSRoute's are its own (after
// intersection), or its listener's. relayed: it is served on a
// Gateway whose plane the shared proxies relay to (streamTunnel).
func (t *translator) throughTunnel(r *routeInfo) (tunnel, public, relayed bool) {
	for _, a := range r.servedThrough {
		if t.streamTunnel(a.listener.gw) {
			tunnel = true
			public = public || len(a.hosts) > 0 || a.listener.public() != ""
		}
		relayed = relayed || a.listener.gw.relayed()
	}
	return tunnel, public, relayed
}

// allocatePorts gives each identity, oldest first, a port in [base,
// base+count): its hash's slot, or the next free one after it; 0 when
// every slot is taken.
func allocatePorts(ids []string, base, count int) []int {
	ports := make([]int, len(ids))
	taken := make(map[int]bool, len(ids))
	for i, id := range ids {
		if len(taken) == count {
			break
		}
		h := fnv.New32a()
		h.Write([]byte(id))
		slot := int(h.Sum32() % uint32(count))
		for taken[slot] {
			slot = (slot + 1) % count
		}
		taken[slot] = true
		ports[i] = base + slot
	}
	return ports
}
