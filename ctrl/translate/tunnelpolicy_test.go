package translate_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// A class's gatewayTunnels policy limits the tunnels its Gateways may name
// as their own: names under a prefix (per namespace), IDs only when
// allowed, tokens always; a Gateway naming another is not accepted.
func TestGatewayTunnelPolicy(t *testing.T) {
	gw := nsName("default", "team-a") // GatewayConfig own-plane, class tunnelgate (with-account)
	cases := []struct {
		name    string
		policy  *v1alpha1.GatewayTunnelPolicy
		tunnel  v1alpha1.GatewayTunnel
		refused string
	}{
		{"no policy", nil, v1alpha1.GatewayTunnel{ID: "6ff42ae2"}, ""},
		{"a name under the namespace's prefix", &v1alpha1.GatewayTunnelPolicy{NamePrefix: "{namespace}-"}, v1alpha1.GatewayTunnel{Name: "default-web"}, ""},
		{"a name outside it", &v1alpha1.GatewayTunnelPolicy{NamePrefix: "{namespace}-"}, v1alpha1.GatewayTunnel{Name: "prod-web"},
			`to start with "default-"`},
		{"an ID", &v1alpha1.GatewayTunnelPolicy{NamePrefix: "{namespace}-"}, v1alpha1.GatewayTunnel{ID: "6ff42ae2"}, "not by ID"},
		{"an ID allowed", &v1alpha1.GatewayTunnelPolicy{AllowIDs: true}, v1alpha1.GatewayTunnel{ID: "6ff42ae2"}, ""},
		{"a token", &v1alpha1.GatewayTunnelPolicy{NamePrefix: "x-"},
			v1alpha1.GatewayTunnel{TokenSecretRef: &v1alpha1.LocalSecretKeyRef{Name: "tok", Key: "token"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := loadGolden(t, "planes.yaml")
			in.Provisioning = translate.ProvisionPlanes
			for i, c := range in.GatewayClassConfigs {
				if c.Name == "with-account" {
					c = c.DeepCopy()
					c.Spec.GatewayTunnels = tc.policy
					in.GatewayClassConfigs[i] = c
				}
			}
			for i, c := range in.GatewayConfigs {
				if c.Name == "own-plane" {
					c = c.DeepCopy()
					c.Spec.Tunnel = &tc.tunnel
					in.GatewayConfigs[i] = c
				}
			}
			out := translate.Translate(in)
			acc := cond(out.Gateways[gw].Conditions, "Accepted")
			if tc.refused == "" {
				if acc == nil || acc.Status != metav1.ConditionTrue {
					t.Fatalf("Accepted %+v, want True", acc)
				}
				if _, ok := out.Planes[gw]; !ok {
					t.Error("no plane")
				}
				return
			}
			if acc == nil || acc.Status != metav1.ConditionFalse || acc.Reason != "InvalidParameters" || !strings.Contains(acc.Message, tc.refused) {
				t.Fatalf("Accepted %+v, want False InvalidParameters saying %q", acc, tc.refused)
			}
			if _, ok := out.Planes[gw]; ok {
				t.Error("a plane for a refused tunnel")
			}
		})
	}
}
