// This file tests the rotation condition on a Gateway with a tunnel of
// its own, and the checks of a GatewayConfig's rotation setting.

package translate_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// A Gateway's own tunnel reports its rotation on the Gateway, as a
// class's does on the GatewayClass.
func TestPlaneRotationCondition(t *testing.T) {
	gw := nsName("default", "team-a")
	key := translate.PlaneTunnelKey("tunnelgate", gw)
	in := loadGolden(t, "planes.yaml")
	in.Provisioning = translate.ProvisionPlanes
	last := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"},
		key: {ID: "6ff42ae2-765d-4adf-8112-31c55c1551ef", Rotation: translate.RotationState{Asked: true, Last: last, Next: last.Add(720 * time.Hour)}}}
	out := translate.Translate(in)
	c := cond(out.Gateways[gw].Conditions, translate.ClassConditionCredentialRotated)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != translate.RotationReasonRotated ||
		!strings.Contains(c.Message, "last rotated at 2026-03-01T12:00:00Z") || !strings.Contains(c.Message, "next rotation due at 2026-03-31T12:00:00Z") {
		t.Errorf("%s = %+v, want True saying when", translate.ClassConditionCredentialRotated, c)
	}
}

// A GatewayConfig's rotation needs a tunnel whose token the controller
// writes, and an interval of at least an hour; the Gateway says which is
// wrong (the CRD refuses both too, but standalone has no API server).
func TestPlaneRotationSettingChecked(t *testing.T) {
	gw := nsName("default", "team-a")
	for _, c := range []struct {
		name   string
		tunnel func(*v1alpha1.GatewayTunnel)
		want   string
	}{
		{"interval too short", func(t *v1alpha1.GatewayTunnel) {
			t.CredentialRotation = &v1alpha1.CredentialRotation{Interval: "30m"}
		}, "of at least 1h0m0s"},
		{"interval not a duration", func(t *v1alpha1.GatewayTunnel) {
			t.CredentialRotation = &v1alpha1.CredentialRotation{Interval: "monthly"}
		}, `interval "monthly" is not a duration`},
		{"a token given", func(t *v1alpha1.GatewayTunnel) {
			t.Name, t.TokenSecretRef = "", &v1alpha1.LocalSecretKeyRef{Name: "tok"}
			t.CredentialRotation = &v1alpha1.CredentialRotation{Interval: "720h"}
		}, "needs a tunnel whose token the controller writes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := loadGolden(t, "planes.yaml")
			in.Provisioning = translate.ProvisionPlanes
			for i, gc := range in.GatewayConfigs {
				if gc.Name == "own-plane" {
					gc = gc.DeepCopy()
					c.tunnel(gc.Spec.Tunnel)
					in.GatewayConfigs[i] = gc
				}
			}
			out := translate.Translate(in)
			a := cond(out.Gateways[gw].Conditions, "Accepted")
			if a == nil || a.Status != metav1.ConditionFalse || !strings.Contains(a.Message, c.want) {
				t.Errorf("Accepted = %+v, want False saying %q", a, c.want)
			}
		})
	}
}

// A GatewayClassConfig's rotation needs tunnel.tokenSecretRef and an
// interval of at least an hour; the class is not accepted otherwise.
func TestClassRotationSettingChecked(t *testing.T) {
	for _, c := range []struct {
		name  string
		token bool
		every string
		want  string
	}{
		{"no token Secret", false, "720h", "needs tunnel.tokenSecretRef"},
		{"interval too short", true, "59m", "of at least 1h0m0s"},
		{"right", true, "720h", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := loadGolden(t, "planes.yaml")
			for i, gc := range in.GatewayClassConfigs {
				gc = gc.DeepCopy()
				if gc.Spec.Tunnel == nil {
					gc.Spec.Tunnel = &v1alpha1.TunnelRef{Name: "t"}
				}
				gc.Spec.Tunnel.TokenSecretRef = nil
				if c.token {
					gc.Spec.Tunnel.TokenSecretRef = &v1alpha1.SecretKeyRef{Namespace: "tg", Name: "tok"}
				}
				gc.Spec.Tunnel.CredentialRotation = &v1alpha1.CredentialRotation{Interval: gwv1.Duration(c.every)}
				in.GatewayClassConfigs[i] = gc
			}
			out := translate.Translate(in)
			a := cond(out.GatewayClasses["tunnelgate"].Status.Conditions, "Accepted")
			if c.want == "" && (a == nil || a.Status != metav1.ConditionTrue) || c.want != "" && (a == nil || a.Status != metav1.ConditionFalse || !strings.Contains(a.Message, c.want)) {
				t.Errorf("Accepted = %+v, want saying %q", a, c.want)
			}
		})
	}
}
