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
// served through the tunnel.

// originPorts gives each stream route served through a tunnel its port.
// routes are oldest first.
func (t *translator) originPorts(routes []pending) {
	var ids []string
	var infos []*routeInfo
	for _, p := range routes {
		if r := p.info; p.stream() && r.problem == "" && t.throughTunnel(r) {
			ids = append(ids, r.kind+"/"+r.meta.Namespace+"/"+r.meta.Name)
			infos = append(infos, r)
		}
	}
	for i, port := range allocatePorts(ids, origin.DefaultStreamPortBase, origin.StreamPortCount) {
		infos[i].originPort = port
		if port == 0 {
			infos[i].portNote = fmt.Sprintf("not served through the tunnel: the %d origin ports for stream routes are taken by older routes", origin.StreamPortCount)
		}
	}
}

// throughTunnel reports whether a stream route is served through a
// tunnel: it is served on a listener (accepted there, not shadowed) of a
// Gateway served through one (streamTunnel).
func (t *translator) throughTunnel(r *routeInfo) bool {
	for _, pi := range r.parents {
		if !pi.accepted() {
			continue
		}
		for _, a := range pi.attachments {
			if a.lostTo == "" && a.shadowedBy == "" && t.streamTunnel(a.listener.gw) {
				return true
			}
		}
	}
	return false
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
