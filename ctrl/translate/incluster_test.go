package translate_test

import (
	"net/netip"
	"slices"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// A plane reached through a tunnel (planes.yaml's team-a: its own;
// team-r: its class's, relayed) serves in the cluster too with
// serveInCluster: its Service's ClusterIP follows the tunnel's hostname
// in its addresses, Programmed waits for that ClusterIP too, its HTTPS
// listeners carry their certificates in its config, and a listener on a
// port its Pods already hold is refused (PortUnavailable) while the
// others are served. Without serveInCluster the same listener is served
// through the tunnel, where ports do not matter.
func TestTunnelPlaneServingInCluster(t *testing.T) {
	for _, tc := range []struct {
		name, gateway, config string
		tunnel                string // the address its tunnel gives
		held                  []gwv1.PortNumber
		free                  gwv1.PortNumber
	}{
		{"own tunnel", "team-a", "own-plane", "own" + translate.TunnelHostnameSuffix, []gwv1.PortNumber{9901, 8443, 2000, 20000, 29999}, 8080},
		{"relayed", "team-r", "relayed-plane", "class" + translate.TunnelHostnameSuffix, []gwv1.PortNumber{9901, 8443}, 2000},
	} {
		gw := nsName("default", tc.gateway)
		for _, inCluster := range []bool{true, false} {
			for _, serviceIP := range []string{"", "10.96.0.9"} {
				t.Run(tc.name, func(t *testing.T) {
					in := planesWith(t, tc.config, inCluster, gw, append(slices.Clone(tc.held), tc.free))
					in.Tunnels[translate.PlaneTunnelKey("tunnelgate", gw)] = &translate.TunnelState{ID: "own"}
					st := &translate.PlaneState{Replicas: 2, Ready: 2, ServiceIP: serviceIP, Relay: &translate.Relay{}}
					in.Planes = map[types.NamespacedName]*translate.PlaneState{gw: st}
					out := translate.Translate(in)

					want := []string{tc.tunnel}
					switch {
					case inCluster && serviceIP == "":
						wantProgrammed(t, out, gw, metav1.ConditionFalse, "Pending", "waiting for the Service")
					case inCluster:
						wantProgrammed(t, out, gw, metav1.ConditionTrue, "Programmed", "also serve in the cluster")
						want = append(want, serviceIP)
					default:
						wantProgrammed(t, out, gw, metav1.ConditionTrue, "Programmed", "")
					}
					if got := addressValues(out, gw); !slices.Equal(got, want) {
						t.Errorf("addresses %v, want %v", got, want)
					}
					for _, port := range tc.held {
						c := cond(listenerConds(out, gw, port), "Accepted")
						switch {
						case c == nil:
							t.Errorf("listener on %d: no Accepted condition", port)
						case inCluster && (c.Status != metav1.ConditionFalse || c.Reason != "PortUnavailable"):
							t.Errorf("listener on %d, held by the plane's Pods: Accepted %s/%s, want False/PortUnavailable", port, c.Status, c.Reason)
						case !inCluster && c.Status != metav1.ConditionTrue:
							t.Errorf("listener on %d, through the tunnel alone: Accepted %s/%s (%s), want True", port, c.Status, c.Reason, c.Message)
						}
					}
					if c := cond(listenerConds(out, gw, tc.free), "Accepted"); c == nil || c.Status != metav1.ConditionTrue {
						t.Errorf("listener on %d, which nothing holds: Accepted %+v, want True", tc.free, c)
					}
					ports := out.Planes[gw].Ports
					if slices.ContainsFunc(ports, func(p translate.PlanePort) bool { return slices.Contains(tc.held, gwv1.PortNumber(p.Port)) }) == inCluster {
						t.Errorf("plane ports %+v: held ports listed %v, want %v", ports, !inCluster, inCluster)
					}
					_, configs := out.ProxyConfigs()
					for _, l := range configs[gw].Listeners {
						if l.Protocol == "HTTPS" && (len(l.Certificates) > 0) != inCluster {
							t.Errorf("listener %s has %d certificates; the plane terminates TLS only when it serves in the cluster", l.Name, len(l.Certificates))
						}
					}
				})
			}
		}
	}
}

// An address pool gives a plane an address only where it serves in the
// cluster: a plane reached through its tunnel alone listens on none, so
// it gets none, and one asked for in spec.addresses cannot be had.
func TestPoolAddressOfTunnelPlanes(t *testing.T) {
	gw := nsName("default", "team-a")
	for _, tc := range []struct {
		name      string
		inCluster bool
		ask       bool
		want      []string
		reason    string
	}{
		{"tunnel only", false, false, []string{"own" + translate.TunnelHostnameSuffix}, "Programmed"},
		// With spec.addresses, the status lists only the address given for
		// it (GEP-5093): none here.
		{"tunnel only, asking for an address", false, true, nil, "AddressNotUsable"},
		{"serving in the cluster too", true, false, []string{"pool", "own" + translate.TunnelHostnameSuffix}, "Programmed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := planesWith(t, "own-plane", tc.inCluster, gw, nil)
			in.AddressPool = netip.MustParsePrefix("10.96.0.0/28")
			in.Tunnels[translate.PlaneTunnelKey("tunnelgate", gw)] = &translate.TunnelState{ID: "own"}
			in.Planes = map[types.NamespacedName]*translate.PlaneState{gw: {Replicas: 1, Ready: 1, ServiceIP: "10.96.0.1"}}
			if tc.ask {
				for i, g := range in.Gateways {
					if g.Name == gw.Name {
						g = g.DeepCopy()
						g.Spec.Addresses = []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType)}}
						in.Gateways[i] = g
					}
				}
			}
			out := translate.Translate(in)
			status := metav1.ConditionTrue
			if tc.reason != "Programmed" {
				status = metav1.ConditionFalse
			}
			wantProgrammed(t, out, gw, status, tc.reason, "")
			a := out.Planes[gw].Address
			if a.IsValid() != tc.inCluster {
				t.Errorf("plane address %v: want one only when serving in the cluster", a)
			}
			want := slices.Clone(tc.want)
			if len(want) > 0 && want[0] == "pool" {
				want[0] = a.String() // the plane's Service's ClusterIP to be
			}
			if got := addressValues(out, gw); !slices.Equal(got, want) {
				t.Errorf("addresses %v, want %v", got, want)
			}
		})
	}
}

// planesWith is planes.yaml with GatewayConfig config's serveInCluster
// set as asked, a listener added to Gateway gw for each of ports (HTTPS,
// with planes.yaml's certificate), and the class tunnel applied.
func planesWith(t *testing.T, config string, inCluster bool, gw types.NamespacedName, ports []gwv1.PortNumber) *translate.Input {
	t.Helper()
	in := loadGolden(t, "planes.yaml")
	in.Provisioning = translate.ProvisionPlanes
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}}
	found := 0
	for i, c := range in.GatewayConfigs {
		if c.Name == config {
			c = c.DeepCopy()
			c.Spec.ServeInCluster = inCluster
			in.GatewayConfigs[i] = c
			found++
		}
	}
	for i, g := range in.Gateways {
		if g.Namespace != gw.Namespace || g.Name != gw.Name {
			continue
		}
		g = g.DeepCopy()
		for _, port := range ports {
			g.Spec.Listeners = append(g.Spec.Listeners, gwv1.Listener{
				Name: listenerName(port), Protocol: gwv1.HTTPSProtocolType, Port: port,
				Hostname: new(gwv1.Hostname("p" + strconv.Itoa(int(port)) + "." + gw.Name + ".example.com")),
				TLS:      &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "internal-cert"}}},
			})
		}
		in.Gateways[i] = g
		found++
	}
	if found != 2 {
		t.Fatalf("planes.yaml lacks GatewayConfig %s or Gateway %s", config, gw)
	}
	return in
}

func listenerName(port gwv1.PortNumber) gwv1.SectionName {
	return gwv1.SectionName("port-" + strconv.Itoa(int(port)))
}

func addressValues(out *translate.Output, gw types.NamespacedName) []string {
	var got []string
	for _, a := range out.Gateways[gw].Addresses {
		got = append(got, a.Value)
	}
	return got
}

// listenerConds are the conditions of Gateway gw's listener on port.
func listenerConds(out *translate.Output, gw types.NamespacedName, port gwv1.PortNumber) []metav1.Condition {
	for _, l := range out.Gateways[gw].Listeners {
		if l.Name == listenerName(port) {
			return l.Conditions
		}
	}
	return nil
}
