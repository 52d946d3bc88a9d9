// This file finds the GatewayConfig a Gateway takes.

package translate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// GatewayConfigRef is the GatewayConfig a Gateway takes: the one in its
// namespace its infrastructure.parametersRef names, or else its class's
// default (classConfig's defaultGatewayConfigRef; classConfig may be nil).
// named is false when it takes none. A parametersRef to another group or
// kind is a problem, and names nothing. The controller resolves it the
// same way to know which Gateways want a plane.
func GatewayConfigRef(g *gwv1.Gateway, classConfig *v1alpha1.GatewayClassConfig) (key types.NamespacedName, named bool, problem string) {
	switch {
	case g.Spec.Infrastructure != nil && g.Spec.Infrastructure.ParametersRef != nil:
		ref := g.Spec.Infrastructure.ParametersRef
		if string(ref.Group) != v1alpha1.Group || string(ref.Kind) != v1alpha1.KindGatewayConfig {
			return key, false, fmt.Sprintf("infrastructure.parametersRef must be group %s kind %s, not %s/%s",
				v1alpha1.Group, v1alpha1.KindGatewayConfig, ref.Group, ref.Kind)
		}
		return types.NamespacedName{Namespace: g.Namespace, Name: ref.Name}, true, ""
	case classConfig != nil && classConfig.Spec.DefaultGatewayConfigRef != nil:
		ref := classConfig.Spec.DefaultGatewayConfigRef
		return types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, true, ""
	}
	return key, false, ""
}

// gatewayParameters resolves a Gateway's parameters (GatewayConfigRef). An
// empty problem means the Gateway may be accepted; with no GatewayConfig,
// or one whose dataPlane is Shared, the shared proxies serve it, and with
// Dedicated a plane of its own (dedicated is then true).
func (t *translator) gatewayParameters(g *gwv1.Gateway, class *classInfo) (cfg *v1alpha1.GatewayConfig, dedicated bool, problem string) {
	key, named, problem := GatewayConfigRef(g, class.config)
	if !named {
		return nil, false, problem
	}
	own := g.Spec.Infrastructure != nil && g.Spec.Infrastructure.ParametersRef != nil
	what := fmt.Sprintf("GatewayConfig %q", key.Name)
	if !own {
		what = fmt.Sprintf("GatewayConfig %s (GatewayClass %s's default)", key, class.obj.Name)
	}
	cfg = t.look.gatewayConfig(key.Namespace, key.Name)
	switch {
	case cfg == nil && own:
		return nil, false, fmt.Sprintf("infrastructure.parametersRef: GatewayConfig %q not found in namespace %s", key.Name, key.Namespace)
	case cfg == nil:
		return nil, false, fmt.Sprintf("GatewayClass %s gives its Gateways GatewayConfig %s (defaultGatewayConfigRef), which is not found",
			class.obj.Name, key)
	case !own && cfg.Spec.Tunnel != nil:
		return nil, false, what + " names a tunnel, which serves one Gateway: a class's default must not; " +
			"give this Gateway a GatewayConfig of its own (spec.infrastructure.parametersRef)"
	}
	switch s := cfg.Spec.EncodedSlashes; s {
	case "", proxycfg.SlashesReject, proxycfg.SlashesDecode, proxycfg.SlashesKeep:
	default:
		return nil, false, fmt.Sprintf("%s: encodedSlashes %q: want %s, %s or %s", what, s,
			proxycfg.SlashesReject, proxycfg.SlashesDecode, proxycfg.SlashesKeep)
	}
	switch cfg.Spec.DataPlane {
	case "", v1alpha1.DataPlaneShared:
		return cfg, false, ""
	case v1alpha1.DataPlaneDedicated:
		if t.in.Provisioning == NoPlanes {
			return nil, false, fmt.Sprintf("%s asks for a Dedicated data plane, and this controller runs none: "+
				"start it with -planes (the Helm chart does), or set dataPlane to Shared", what)
		}
		if p := dedicatedProblem(what, g.Namespace, &cfg.Spec, class); p != "" {
			return nil, false, p
		}
		return cfg, true, ""
	default:
		return nil, false, fmt.Sprintf("%s: dataPlane %q: want %s or %s", what, cfg.Spec.DataPlane,
			v1alpha1.DataPlaneShared, v1alpha1.DataPlaneDedicated)
	}
}

// dedicatedProblem says why a Dedicated plane cannot run, or "".
//
// A plane with a tunnel of its own reaches Cloudflare through it: the
// connectors of one tunnel are interchangeable at Cloudflare's edge, so
// the class's tunnel could not keep this Gateway's requests on this
// Gateway's proxies. That tunnel's document and DNS records are written
// with the class's Cloudflare credentials.
//
// A plane with classTunnel takes its requests from the shared proxies,
// which the class's tunnel carries them to: the class must have one.
//
// A plane with neither serves in the cluster only, on its Service. A
// class with a tunnel publishes its Gateways' hostnames through it, which
// such a plane would not serve, so it is refused there. Either of the
// others may serve in the cluster too (serveInCluster).
func dedicatedProblem(what, namespace string, spec *v1alpha1.GatewayConfigSpec, class *classInfo) string {
	classTunnel := class.config != nil && class.config.Spec.Tunnel != nil
	switch {
	case spec.Tunnel != nil && spec.ClassTunnel:
		return what + ": set tunnel or classTunnel, not both"
	case spec.Relayed() && !classTunnel:
		return fmt.Sprintf("%s: classTunnel: GatewayClass %s has no tunnel (its GatewayClassConfig's spec.tunnel) to carry the Gateway's requests",
			what, class.obj.Name)
	case spec.Relayed():
		return ""
	case spec.InClusterOnly() && classTunnel:
		return fmt.Sprintf("%s has no tunnel, so its data plane would serve in the cluster only, "+
			"while GatewayClass %s publishes its Gateways through its tunnel: give it a tunnel of its own (spec.tunnel: name, id or tokenSecretRef), "+
			"or the class's (spec.classTunnel: true) (either may also serve in the cluster: serveInCluster: true)",
			what, class.obj.Name)
	case spec.InClusterOnly():
		return ""
	}
	if r := spec.Tunnel.CredentialRotation; r != nil {
		if spec.Tunnel.TokenSecretRef != nil {
			return what + ": tunnel.credentialRotation needs a tunnel whose token the controller writes (name or id), not tokenSecretRef"
		}
		if p := rotationIntervalProblem(r); p != "" {
			return what + ": " + p
		}
	}
	if class.config == nil || class.config.Spec.CredentialsRef == nil {
		return fmt.Sprintf("%s: a Gateway's own tunnel is managed with its GatewayClass's Cloudflare credentials: "+
			"GatewayClass %s has no GatewayClassConfig with a credentialsRef", what, class.obj.Name)
	}
	return tunnelPolicyProblem(what, namespace, spec.Tunnel, class)
}

// tunnelPolicyProblem says why the class's gatewayTunnels policy refuses
// the tunnel a Gateway names, or "". The tunnels of the class's account
// are managed with the class's credentials, so which of them a tenant's
// GatewayConfig may name is the cluster admin's to say.
func tunnelPolicyProblem(what, namespace string, t *v1alpha1.GatewayTunnel, class *classInfo) string {
	if why := class.config.Spec.GatewayTunnels.Refuses(namespace, t); why != "" {
		return fmt.Sprintf("%s: %s, as GatewayClass %s says", what, why, class.obj.Name)
	}
	return ""
}
