package translate_test

import (
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// statusAddrs are a Gateway's status addresses as "value routability",
// with "-" for an address without one.
func statusAddrs(out *translate.Output, gw types.NamespacedName) []string {
	var got []string
	for _, a := range out.Gateways[gw].Addresses {
		r := "-"
		if a.Routability != nil {
			r = `"` + string(*a.Routability) + `"`
		}
		got = append(got, a.Value+" "+r)
	}
	return got
}

// Every status address says its routability (GEP-5093): the tunnel's
// hostname and a pool address of the shared proxies have no portable
// guarantee (""); a plane's Service address is a ClusterIP (Cluster).
func TestStatusAddressRoutability(t *testing.T) {
	in := withGateways(t, "")
	in.AddressPool = netip.MustParsePrefix("10.9.0.0/29")
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}}
	in.Addresses = []gwv1.GatewayStatusAddress{
		{Type: new(gwv1.HostnameAddressType), Value: "proxy-http.ns.svc.cluster.local", Routability: new(gwv1.GatewayAddressRoutabilityCluster)},
	}
	out := translate.Translate(in)
	g1 := types.NamespacedName{Namespace: "default", Name: "g1"}
	want := `10.9.0.1 "",class.cfargotunnel.com "",proxy-http.ns.svc.cluster.local "Cluster"`
	if got := strings.Join(statusAddrs(out, g1), ","); got != want {
		t.Errorf("addresses %s\nwant %s", got, want)
	}
	wantCond(t, out.Gateways[g1].Conditions, "AddressesAssigned", metav1.ConditionTrue, string(gwv1.GatewayReasonAddressesAssigned))

	// CRDs of v1.6 have no routability field: it is not written.
	in.BundleVersion = "v1.6.3"
	out = translate.Translate(in)
	want = `10.9.0.1 -,class.cfargotunnel.com -,proxy-http.ns.svc.cluster.local -`
	if got := strings.Join(statusAddrs(out, g1), ","); got != want {
		t.Errorf("with v1.6 CRDs: addresses %s\nwant %s", got, want)
	}
}

// spec.addresses' routability: the default and the conformance suite's
// sentinel are served from the pool, the sentinel reported as asked;
// Cluster needs a plane serving in the cluster; other values are not
// supported. With spec.addresses, the status lists only the address given.
func TestSpecAddressRoutability(t *testing.T) {
	ask := func(r gwv1.GatewayAddressRoutabilityType) []gwv1.GatewaySpecAddress {
		return []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Routability: r}}
	}
	g1 := types.NamespacedName{Namespace: "default", Name: "g1"}
	for _, c := range []struct {
		name   string
		r      gwv1.GatewayAddressRoutabilityType
		want   string // status addresses, or the Programmed=False reason
		assign metav1.ConditionStatus
	}{
		{"default", "", `10.9.0.1 ""`, metav1.ConditionTrue},
		{"sentinel", "testing.x-k8s.io/sentinel", `10.9.0.1 "testing.x-k8s.io/sentinel"`, metav1.ConditionTrue},
		{"Cluster, shared proxies", gwv1.GatewayAddressRoutabilityCluster, "AddressNotAssigned", metav1.ConditionFalse},
		{"another implementation's", "example.com/CorpWan", "AddressNotAssigned", metav1.ConditionFalse},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := withGateways(t, "")
			in.AddressPool = netip.MustParsePrefix("10.9.0.0/29")
			in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}}
			in.Gateways[0].Spec.Addresses = ask(c.r)
			out := translate.Translate(in)
			st := out.Gateways[g1]
			wantCond(t, st.Conditions, "Accepted", metav1.ConditionTrue, "")
			got := strings.Join(statusAddrs(out, g1), ",")
			if strings.Contains(c.want, " ") {
				if got != c.want {
					t.Errorf("addresses %s, want %s", got, c.want)
				}
				wantCond(t, st.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
				wantCond(t, st.Conditions, "AddressesAssigned", c.assign, string(gwv1.GatewayReasonAddressesAssigned))
				return
			}
			if got != "" {
				t.Errorf("addresses %s, want none", got)
			}
			wantCond(t, st.Conditions, "Programmed", metav1.ConditionFalse, c.want)
			wantCond(t, st.Conditions, "AddressesAssigned", c.assign, string(gwv1.GatewayReasonAddressesNotAssigned))
		})
	}
}

// A Gateway whose own plane serves it in the cluster gets a Cluster
// address when it asks: its pool address, or without a pool its Service's
// ClusterIP, once Kubernetes has given one (AddressesAssigned is left out
// until then).
func TestClusterAddressOfPlanes(t *testing.T) {
	gw := types.NamespacedName{Namespace: "default", Name: "internal"}
	for _, pool := range []string{"10.96.0.0/28", ""} {
		for _, serviceIP := range []string{"10.96.7.7", ""} {
			in := planesWith(t, "own-plane", true, gw, nil)
			if pool != "" {
				in.AddressPool = netip.MustParsePrefix(pool)
			}
			in.Planes = map[types.NamespacedName]*translate.PlaneState{gw: {Replicas: 1, Ready: 1, ServiceIP: serviceIP}}
			for i, g := range in.Gateways {
				if g.Name == gw.Name {
					g = g.DeepCopy()
					g.Spec.Addresses = []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Routability: gwv1.GatewayAddressRoutabilityCluster}}
					in.Gateways[i] = g
				}
			}
			out := translate.Translate(in)
			got := strings.Join(statusAddrs(out, gw), ",")
			var want string
			switch {
			case pool != "":
				want = out.Planes[gw].Address.String() + ` "Cluster"`
			case serviceIP != "":
				want = serviceIP + ` "Cluster"`
			}
			if got != want {
				t.Errorf("pool %q, Service IP %q: addresses %q, want %q", pool, serviceIP, got, want)
			}
			cond := findCondition(out.Gateways[gw].Conditions, "AddressesAssigned")
			if want == "" && cond != nil || want != "" && (cond == nil || cond.Status != metav1.ConditionTrue) {
				t.Errorf("pool %q, Service IP %q: AddressesAssigned %+v", pool, serviceIP, cond)
			}
		}
	}
}

func findCondition(list []metav1.Condition, typ string) *metav1.Condition {
	for i := range list {
		if list[i].Type == typ {
			return &list[i]
		}
	}
	return nil
}

// CRDs of v1.6 are served, saying what an upgrade brings; others are not,
// saying what to install.
func TestSupportedVersion(t *testing.T) {
	for _, c := range []struct {
		bundle   string
		status   metav1.ConditionStatus
		accepted metav1.ConditionStatus
		says     string
	}{
		{"v1.7.0", metav1.ConditionTrue, metav1.ConditionTrue, "v1.7.x is supported"},
		{"v1.7.2", metav1.ConditionTrue, metav1.ConditionTrue, "v1.7.x is supported"},
		{"v1.6.3", metav1.ConditionTrue, metav1.ConditionTrue, "served as v1.6.x; v1.7 adds address routability"},
		{"v1.5.1", metav1.ConditionFalse, metav1.ConditionFalse, "releases/download/v1.7.0/standard-install.yaml"},
		{"unknown", metav1.ConditionFalse, metav1.ConditionFalse, "install Gateway API v1.7.0's CRDs"},
	} {
		in := loadGolden(t, "basic.yaml")
		in.BundleVersion = c.bundle
		out := translate.Translate(in)
		for name, res := range out.GatewayClasses {
			sv := wantCond(t, res.Status.Conditions, "SupportedVersion", c.status, "")
			wantCond(t, res.Status.Conditions, "Accepted", c.accepted, "")
			if sv != nil && !strings.Contains(sv.Message, c.says) {
				t.Errorf("%s, bundle %s: SupportedVersion says %q, want it to say %q", name, c.bundle, sv.Message, c.says)
			}
		}
	}
}
