package translate

import (
	"fmt"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// gatewayParameters resolves a Gateway's infrastructure.parametersRef: a
// GatewayConfig in the Gateway's namespace. An empty problem means the
// Gateway may be accepted; without a parametersRef, or with a GatewayConfig
// whose dataPlane is Shared, the shared proxies serve it, and with
// Dedicated a plane of its own (dedicated is then true).
func (t *translator) gatewayParameters(g *gwv1.Gateway, class *classInfo) (cfg *v1alpha1.GatewayConfig, dedicated bool, problem string) {
	if g.Spec.Infrastructure == nil || g.Spec.Infrastructure.ParametersRef == nil {
		return nil, false, ""
	}
	ref := g.Spec.Infrastructure.ParametersRef
	if string(ref.Group) != v1alpha1.Group || string(ref.Kind) != v1alpha1.KindGatewayConfig {
		return nil, false, fmt.Sprintf("infrastructure.parametersRef must be group %s kind %s, not %s/%s",
			v1alpha1.Group, v1alpha1.KindGatewayConfig, ref.Group, ref.Kind)
	}
	cfg = t.look.gatewayConfig(g.Namespace, ref.Name)
	if cfg == nil {
		return nil, false, fmt.Sprintf("infrastructure.parametersRef: GatewayConfig %q not found in namespace %s", ref.Name, g.Namespace)
	}
	switch cfg.Spec.DataPlane {
	case "", v1alpha1.DataPlaneShared:
		return cfg, false, ""
	case v1alpha1.DataPlaneDedicated:
		if t.in.Provisioning == NoPlanes {
			return nil, false, fmt.Sprintf("GatewayConfig %q asks for a Dedicated data plane, and this controller runs none: "+
				"start it with -planes (the Helm chart does), or set dataPlane to Shared", ref.Name)
		}
		if p := dedicatedProblem(ref.Name, &cfg.Spec, class); p != "" {
			return nil, false, p
		}
		return cfg, true, ""
	default:
		return nil, false, fmt.Sprintf("GatewayConfig %q: dataPlane %q: want %s or %s", ref.Name, cfg.Spec.DataPlane,
			v1alpha1.DataPlaneShared, v1alpha1.DataPlaneDedicated)
	}
}

// dedicatedProblem says why a Dedicated plane cannot run, or "". A plane
// reaches Cloudflare through a tunnel of its own: the connectors of one
// tunnel are interchangeable at Cloudflare's edge, so the class's tunnel
// could not keep this Gateway's requests on this Gateway's proxies. The
// tunnel's document and DNS records are written with the class's
// Cloudflare credentials.
func dedicatedProblem(name string, spec *v1alpha1.GatewayConfigSpec, class *classInfo) string {
	if spec.Tunnel == nil {
		return fmt.Sprintf("GatewayConfig %q: a Dedicated data plane needs a tunnel of its own (spec.tunnel: name, id or tokenSecretRef); "+
			"this version of tunnelgate does not serve a Dedicated plane without one", name)
	}
	if class.config == nil || class.config.Spec.CredentialsRef == nil {
		return fmt.Sprintf("GatewayConfig %q: a Gateway's own tunnel is managed with its GatewayClass's Cloudflare credentials: "+
			"GatewayClass %s has no GatewayClassConfig with a credentialsRef", name, class.obj.Name)
	}
	return ""
}
