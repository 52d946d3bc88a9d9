package translate_test

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// A plane with classTunnel (planes.yaml's team-r) is published through
// its class's tunnel, and the shared proxies hold of it only its
// listeners, stripped of certificates, and a relay per protocol to its
// ready proxies, once its state gives the relay's credentials: never its
// routes or clusters. Until then, and while it has no ready proxy, it is
// not Programmed.
func TestRelayedPlane(t *testing.T) {
	gw := nsName("default", "team-r")
	ca := testpki.NewCA(t, "relay CA")
	cert, key := ca.Issue(t, "shared proxies", false)
	relay := &translate.Relay{Endpoints: []string{"10.244.9.1:8443", "10.244.9.2:8443"}, ServerName: "relay.example",
		CAPEM: string(ca.PEM), ClientCertPEM: string(cert), ClientKeyPEM: string(key)}
	for _, tc := range []struct {
		name    string
		plane   *translate.PlaneState
		status  metav1.ConditionStatus
		message string
	}{
		{"no Deployment yet", nil, metav1.ConditionFalse, "waiting for the Deployment"},
		{"no proxy ready", &translate.PlaneState{Replicas: 2, Relay: relay}, metav1.ConditionFalse, "0 of 2"},
		{"no relay credentials yet", &translate.PlaneState{Replicas: 2, Ready: 2}, metav1.ConditionFalse, "relay credentials"},
		{"ready", &translate.PlaneState{Replicas: 2, Ready: 2, Relay: relay}, metav1.ConditionTrue, "relay them to the plane"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := loadGolden(t, "planes.yaml")
			in.Provisioning = translate.ProvisionPlanes
			in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}}
			if tc.plane != nil {
				in.Planes = map[types.NamespacedName]*translate.PlaneState{gw: tc.plane}
			}
			out := translate.Translate(in)
			wantProgrammed(t, out, gw, tc.status, "", tc.message)
			if a := out.Gateways[gw].Addresses; len(a) != 1 || a[0].Value != "class"+translate.TunnelHostnameSuffix {
				t.Errorf("addresses %+v, want the class tunnel's alone", a)
			}
			for _, host := range []string{"web.r.example.com", "grpc.r.example.com"} {
				if !slices.ContainsFunc(out.Hostnames, func(h translate.Hostname) bool {
					return h.Name == host && slices.Equal(h.Classes, []string{"tunnelgate"})
				}) {
					t.Errorf("%s is not the class tunnel's: %+v", host, out.Hostnames)
				}
			}
			p := out.Planes[gw]
			if p == nil || len(p.Hostnames) != 2 {
				t.Fatalf("plane %+v: want one with both hostnames", p)
			}

			shared, planes := out.ProxyConfigs()
			for _, r := range shared.Routes {
				if strings.HasPrefix(r.Name, "team-r-") {
					t.Errorf("the shared config holds team-r's route %s", r.Name)
				}
			}
			if n := len(planes[gw].Routes); n != 2 {
				t.Errorf("the plane's config has %d routes, want team-r's 2", n)
			}
			var relays []proxycfg.Route
			for _, r := range shared.Routes {
				if r.Namespace == "default" && r.Name == "relay:team-r" {
					relays = append(relays, r)
				}
			}
			if tc.plane == nil || tc.plane.Relay == nil {
				if len(relays) > 0 || slices.Contains(listenerNames(shared), "default/team-r/https") {
					t.Errorf("a relay without credentials: routes %+v, listeners %v", relays, listenerNames(shared))
				}
				return
			}
			checkRelay(t, shared, relays, relay)
			p2 := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer p2.Close()
			if err := p2.Load(shared); err != nil {
				t.Errorf("the data plane refuses the shared config with a relay: %v", err)
			}
		})
	}
}

// checkRelay checks the shared config's relay of team-r: its listeners
// without certificates, an HTTP/1.1 relay for web and an HTTP/2 one for
// grpc, each to the relay's endpoints with its credentials.
func checkRelay(t *testing.T, shared *proxycfg.Config, relays []proxycfg.Route, relay *translate.Relay) {
	t.Helper()
	for _, l := range shared.Listeners {
		if strings.HasPrefix(l.Name, "default/team-r/") && (len(l.Certificates) > 0 || l.Address != "") {
			t.Errorf("shared listener %s carries certificates or an address", l.Name)
		}
	}
	if !slices.Contains(listenerNames(shared), "default/team-r/https") {
		t.Errorf("shared listeners %v: want team-r's", listenerNames(shared))
	}
	if len(relays) != 2 {
		t.Fatalf("relay routes %+v, want 2", relays)
	}
	clusters := map[string]proxycfg.Cluster{}
	for _, c := range shared.Clusters {
		clusters[c.Name] = c
	}
	for _, want := range []struct {
		host string
		h2   bool
	}{{"web.r.example.com", false}, {"grpc.r.example.com", true}} {
		i := slices.IndexFunc(relays, func(r proxycfg.Route) bool { return slices.Equal(r.Hostnames, []string{want.host}) })
		if i < 0 {
			t.Errorf("no relay route for %s alone: %+v", want.host, relays)
			continue
		}
		r := relays[i]
		c, ok := clusters[r.Rules[0].Backends[0].Cluster]
		if !ok || c.TLS == nil {
			t.Errorf("relay of %s: cluster %q missing or without TLS", want.host, r.Rules[0].Backends[0].Cluster)
			continue
		}
		var eps []string
		for _, e := range c.Endpoints {
			eps = append(eps, e.Address)
		}
		tls := c.TLS
		if !slices.Equal(eps, relay.Endpoints) || tls.H2 != want.h2 || tls.SNI != relay.ServerName || tls.CAPEM != relay.CAPEM ||
			tls.ClientCertPEM != relay.ClientCertPEM || tls.ClientKeyPEM != relay.ClientKeyPEM || c.Protocol != proxycfg.ProtoTLS {
			t.Errorf("relay cluster of %s: %+v (TLS %+v); want the relay's endpoints and credentials, H2 %v", want.host, c, *tls, want.h2)
		}
		if len(r.Rules) != 1 || r.Rules[0].Timeouts != nil || r.Rules[0].Retry != nil || len(r.Rules[0].Filters) > 0 {
			t.Errorf("relay route of %s: %+v; want one rule, no timeout, retry or filter", want.host, r.Rules)
		}
	}
}

// The shared proxies relay HTTP alone: a TCP listener of a relayed plane
// stays out of their config (and of the relay routes), and a TCPRoute on
// it is served in the cluster only, with no origin port and no public
// hostname, saying why on Accepted.
func TestRelayedPlaneStreams(t *testing.T) {
	gw := nsName("default", "team-r")
	ca := testpki.NewCA(t, "relay CA")
	cert, key := ca.Issue(t, "shared proxies", false)
	relay := &translate.Relay{Endpoints: []string{"10.244.9.1:8443"}, ServerName: "relay.example",
		CAPEM: string(ca.PEM), ClientCertPEM: string(cert), ClientKeyPEM: string(key)}
	in := loadGolden(t, "planes.yaml")
	in.Provisioning = translate.ProvisionPlanes
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}}
	in.Planes = map[types.NamespacedName]*translate.PlaneState{gw: {Replicas: 1, Ready: 1, Relay: relay}}
	in.Gateways = slices.Clone(in.Gateways)
	i := slices.IndexFunc(in.Gateways, func(g *gwv1.Gateway) bool { return g.Name == "team-r" })
	g := in.Gateways[i].DeepCopy()
	g.Spec.Listeners = append(g.Spec.Listeners, gwv1.Listener{Name: "tcp", Protocol: gwv1.TCPProtocolType, Port: 7000})
	g.Annotations = map[string]string{translate.AnnotationTCPHostnames: "tcp=tcp.r.example.com"}
	in.Gateways[i] = g
	in.TCPRoutes = []*gwv1.TCPRoute{{
		ObjectMeta: metav1.ObjectMeta{Name: "team-r-tcp", Namespace: "default", UID: "team-r-tcp", ResourceVersion: "1"},
		Spec: gwv1.TCPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "team-r", SectionName: ptr(gwv1.SectionName("tcp"))}}},
			Rules:           []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "common", Port: ptr(gwv1.PortNumber(80))}}}}},
		},
	}}
	out := translate.Translate(in)

	st := out.TCPRoutes[nsName("default", "team-r-tcp")]
	if len(st) != 1 {
		t.Fatalf("TCPRoute statuses %+v", st)
	}
	if a := cond(st[0].Conditions, "Accepted"); a == nil || a.Status != metav1.ConditionTrue || !strings.Contains(a.Message, "relay HTTP") {
		t.Errorf("Accepted %+v: want True, saying the relay carries no streams", a)
	}
	for _, r := range out.Config.Routes {
		if r.Name == "team-r-tcp" && r.OriginPort != 0 {
			t.Errorf("the relayed plane's TCPRoute has origin port %d", r.OriginPort)
		}
	}
	for _, h := range append(slices.Clone(out.Hostnames), out.Planes[gw].Hostnames...) {
		if h.Name == "tcp.r.example.com" {
			t.Errorf("tcp.r.example.com is published: %+v", h)
		}
	}
	shared, planes := out.ProxyConfigs()
	if slices.Contains(listenerNames(shared), "default/team-r/tcp") {
		t.Errorf("the shared config holds the plane's TCP listener: %v", listenerNames(shared))
	}
	for _, r := range shared.Routes {
		if r.Name == "relay:team-r" && slices.Contains(r.Listeners, "default/team-r/tcp") {
			t.Errorf("relay route %s is bound to the TCP listener: %v", r.Name, r.Listeners)
		}
	}
	if !slices.ContainsFunc(planes[gw].Routes, func(r proxycfg.Route) bool { return r.Name == "team-r-tcp" }) {
		t.Error("the plane's config lacks its TCPRoute")
	}
}
