package controller

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/planes"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Whether a Gateway wants the shared proxies is read as translate reads
// it: its own GatewayConfig first, then its class's default, so a plane is
// neither retired nor kept by mistake.
func TestWhoWantsAPlane(t *testing.T) {
	const controllerName = "tunnelgate.dev/controller"
	ref := func(name string) *gwv1.GatewayInfrastructure {
		return &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: v1alpha1.Group, Kind: v1alpha1.KindGatewayConfig, Name: name}}
	}
	gateway := func(name, class string, inf *gwv1.GatewayInfrastructure) *gwv1.Gateway {
		return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(class), Infrastructure: inf}}
	}
	class := func(name, config string) *gwv1.GatewayClass {
		gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gwv1.GatewayClassSpec{ControllerName: controllerName}}
		if config != "" {
			gc.Spec.ParametersRef = &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: v1alpha1.KindGatewayClassConfig, Name: config}
		}
		return gc
	}
	config := func(ns, name, dataPlane string) *v1alpha1.GatewayConfig {
		return &v1alpha1.GatewayConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.GatewayConfigSpec{DataPlane: dataPlane}}
	}
	snap := &translate.Snapshot{
		GatewayClasses: []*gwv1.GatewayClass{class("plain", ""), class("planes", "planes")},
		GatewayClassConfigs: []*v1alpha1.GatewayClassConfig{{ObjectMeta: metav1.ObjectMeta{Name: "planes"},
			Spec: v1alpha1.GatewayClassConfigSpec{DefaultGatewayConfigRef: &v1alpha1.ObjectRef{Namespace: "platform", Name: "dedicated"}}}},
		GatewayConfigs: []*v1alpha1.GatewayConfig{
			config("platform", "dedicated", v1alpha1.DataPlaneDedicated),
			config("team", "shared", v1alpha1.DataPlaneShared),
			config("team", "own", v1alpha1.DataPlaneDedicated),
		},
		Gateways: []*gwv1.Gateway{
			gateway("plain", "plain", nil),                 // shared: no GatewayConfig at all
			gateway("plain-own", "plain", ref("own")),      // a plane
			gateway("by-default", "planes", nil),           // a plane: the class's default
			gateway("opted-out", "planes", ref("shared")),  // shared: its own wins
			gateway("missing", "planes", ref("not-there")), // neither: refused, its plane kept
			deleting(gateway("deleting", "planes", nil)),   // its plane goes at once
		},
	}
	nn := func(names ...string) []types.NamespacedName {
		var out []types.NamespacedName
		for _, n := range names {
			out = append(out, types.NamespacedName{Namespace: "team", Name: n})
		}
		return out
	}
	none := gatewaysWantingNoPlane(snap, controllerName)
	slices.SortFunc(none, compareNN)
	if want := nn("deleting", "opted-out", "plain"); !slices.Equal(none, want) {
		t.Errorf("wanting no plane: %v, want %v", none, want)
	}
	wanting := gatewaysWantingPlanes(snap, classConfigs(snap, controllerName))
	for c := range wanting {
		slices.SortFunc(wanting[c], compareNN)
	}
	if got, want := wanting["planes"], nn("by-default", "missing"); !slices.Equal(got, want) {
		t.Errorf("class planes wants planes for %v, want %v", got, want)
	}
	if got, want := wanting["plain"], nn("plain-own"); !slices.Equal(got, want) {
		t.Errorf("class plain wants planes for %v, want %v", got, want)
	}
}

func compareNN(a, b types.NamespacedName) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

func deleting(g *gwv1.Gateway) *gwv1.Gateway {
	g.DeletionTimestamp = &metav1.Time{}
	return g
}

// The shared proxies get a relay only with credentials that parse: a
// cluster they cannot use would make them refuse their whole config.
func TestRelayOf(t *testing.T) {
	if r, problem := relayOf(planes.State{}, nil); r != nil || problem != "" {
		t.Errorf("no credentials yet: %+v %q; want nothing", r, problem)
	}
	good, err := planes.NewRelayCredentials(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r, problem := relayOf(planes.State{PodIPs: []string{"10.244.1.2", "fd00::5"}, Relay: &good}, nil)
	if problem != "" || r == nil {
		t.Fatalf("good credentials: %q", problem)
	}
	if want := []string{"10.244.1.2:8443", "[fd00::5]:8443"}; !slices.Equal(r.Endpoints, want) || r.ServerName != provision.RelayServerName ||
		r.CAPEM != string(good.CA) || r.ClientCertPEM != string(good.ClientCert) || r.ClientKeyPEM != string(good.ClientKey) {
		t.Errorf("relay %+v; want endpoints %v and the credentials", r, want)
	}
	for name, broken := range map[string]func(c *provision.RelayCredentials){
		"client key of another": func(c *provision.RelayCredentials) { c.ClientKey = good.Key },
		"no CA":                 func(c *provision.RelayCredentials) { c.CA = []byte("not PEM") },
	} {
		c := good
		broken(&c)
		if r, problem := relayOf(planes.State{Relay: &c}, r); r != nil || problem == "" {
			t.Errorf("%s: relay %v, problem %q; want none, and why", name, r != nil, problem)
		}
	}
}
