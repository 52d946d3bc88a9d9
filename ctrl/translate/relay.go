// This file implements the shared proxies' relay to dedicated planes.

package translate

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A plane with GatewayConfig classTunnel has no cloudflared: its class's
// tunnel carries its hostnames to the shared proxies, as for any Gateway
// of the class, and they relay each request, as it came, to the plane's
// proxies, which alone hold its routes. So the shared proxies' config
// holds, of such a Gateway, only
//   - its listeners, without certificates, client validation or address
//     (the shared proxies terminate no TLS of its and open no socket of
//     its), so that its hostnames reach the relay: its HTTP and HTTPS
//     listeners (streams are not relayed: its stream routes are served
//     in the cluster only);
//   - a relay route per protocol: every path of its hostnames to its
//     plane. cloudflared speaks HTTP/2 to the shared proxies for a
//     hostname a GRPCRoute serves, so those are relayed over HTTP/2, the
//     others over HTTP/1.1 (WebSocket needs it);
//   - the relay clusters: the plane's ready proxies, over TLS with the
//     plane's relay credentials (Relay).
// While the Gateway moves onto its plane, the shared proxies serve it
// whole instead, as for any moving Gateway.

// relayName names what the shared proxies hold for a relayed Gateway:
// its relay routes (in its namespace) and clusters.
func relayName(gateway types.NamespacedName) string { return "relay:" + gateway.Name }

// addRelays gives shared the relays of the planes it relays to.
func (o *Output) addRelays(shared *proxycfg.Config) {
	listeners := make(map[string]proxycfg.Listener, len(o.Config.Listeners))
	for _, l := range o.Config.Listeners {
		listeners[l.Name] = l
	}
	for _, key := range slices.SortedFunc(maps.Keys(o.Planes), compareKeys) {
		p := o.Planes[key]
		if p.Relay == nil || p.Moving {
			continue
		}
		var relayed []string // its HTTP and HTTPS listeners
		for _, name := range p.Listeners {
			l := listeners[name]
			if l.Protocol != proxycfg.ListenerHTTP && l.Protocol != proxycfg.ListenerHTTPS {
				continue
			}
			l.Certificates, l.ClientValidation, l.Address = nil, nil, ""
			shared.Listeners = append(shared.Listeners, l)
			relayed = append(relayed, name)
		}
		var h1, h2 []string
		for _, h := range p.Hostnames {
			if h.GRPC {
				h2 = append(h2, h.Name)
			} else {
				h1 = append(h1, h.Name)
			}
		}
		for _, part := range []struct {
			hosts []string
			h2    bool
		}{{h1, false}, {h2, true}} {
			if len(part.hosts) == 0 {
				continue // a route without hostnames would take every host
			}
			c := relayCluster(key, p.Relay, part.h2)
			shared.Routes = append(shared.Routes, relayRoute(key, p, relayed, part.hosts, c.Name))
			shared.Clusters = append(shared.Clusters, c)
		}
	}
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// relayRoute sends every request for hosts on the plane's listeners to
// cluster, as it came: no filter, no timeout (a stream lasts as long as
// it lasts), no retry (the plane's routes retry where they say so).
func relayRoute(key types.NamespacedName, p *Plane, listeners, hosts []string, cluster string) proxycfg.Route {
	return proxycfg.Route{
		Kind:      proxycfg.KindHTTP,
		Namespace: key.Namespace,
		Name:      relayName(key),
		Created:   p.Gateway.CreationTimestamp.UTC(),
		Listeners: listeners,
		Hostnames: hosts,
		Rules: []proxycfg.Rule{{
			Matches:  []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}},
			Backends: []proxycfg.BackendRef{{Cluster: cluster, Weight: 1}},
		}},
	}
}

// relayCluster is the plane's ready proxies, over TLS with its relay
// credentials, offering HTTP/2 when h2.
func relayCluster(key types.NamespacedName, r *Relay, h2 bool) proxycfg.Cluster {
	name := key.Namespace + "/" + relayName(key)
	if h2 {
		name += "/h2"
	}
	eps := make([]proxycfg.Endpoint, 0, len(r.Endpoints))
	for _, e := range r.Endpoints {
		eps = append(eps, proxycfg.Endpoint{Address: e})
	}
	return proxycfg.Cluster{
		Name:      name,
		Protocol:  proxycfg.ProtoTLS,
		Endpoints: eps,
		TLS: &proxycfg.TLSSettings{SNI: r.ServerName, CAPEM: r.CAPEM,
			ClientCertPEM: r.ClientCertPEM, ClientKeyPEM: r.ClientKeyPEM, H2: h2},
	}
}
