package translate

import (
	"fmt"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// gatewayParameters resolves a Gateway's infrastructure.parametersRef: a
// GatewayConfig in the Gateway's namespace. An empty problem means the
// Gateway may be accepted; without a parametersRef, or with a GatewayConfig
// whose dataPlane is Shared, the shared proxies serve it. A Dedicated data
// plane is refused with a reason until the controller provisions one.
func (t *translator) gatewayParameters(g *gwv1.Gateway) (*v1alpha1.GatewayConfig, string) {
	if g.Spec.Infrastructure == nil || g.Spec.Infrastructure.ParametersRef == nil {
		return nil, ""
	}
	ref := g.Spec.Infrastructure.ParametersRef
	if string(ref.Group) != v1alpha1.Group || string(ref.Kind) != v1alpha1.KindGatewayConfig {
		return nil, fmt.Sprintf("infrastructure.parametersRef must be group %s kind %s, not %s/%s",
			v1alpha1.Group, v1alpha1.KindGatewayConfig, ref.Group, ref.Kind)
	}
	cfg := t.look.gatewayConfig(g.Namespace, ref.Name)
	if cfg == nil {
		return nil, fmt.Sprintf("infrastructure.parametersRef: GatewayConfig %q not found in namespace %s", ref.Name, g.Namespace)
	}
	switch cfg.Spec.DataPlane {
	case "", v1alpha1.DataPlaneShared:
		return cfg, ""
	case v1alpha1.DataPlaneDedicated:
		return nil, fmt.Sprintf("GatewayConfig %q asks for a Dedicated data plane, which this version of tunnelgate does not run yet; set dataPlane to Shared", ref.Name)
	default:
		return nil, fmt.Sprintf("GatewayConfig %q: dataPlane %q: want %s or %s", ref.Name, cfg.Spec.DataPlane,
			v1alpha1.DataPlaneShared, v1alpha1.DataPlaneDedicated)
	}
}
