// This file defines a plane's inputs, names and labels, and renders its
// objects.

package provision

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// Install is what every dedicated plane shares: how the controller was
// installed. The chart writes it as JSON (ParseInstall) for the
// controller's -planes flag.
type Install struct {
	ProxyImage       string `json:"proxyImage"`
	CloudflaredImage string `json:"cloudflaredImage"`
	// ControllerURL is the config API as proxies reach it
	// (https://<controller Service>.<namespace>.svc:<port>).
	ControllerURL string `json:"controllerURL"`
	// TunnelProtocol is cloudflared's --protocol (http2 or quic).
	TunnelProtocol string `json:"tunnelProtocol"`
	// GracePeriod is cloudflared's --grace-period, a Go duration.
	GracePeriod string `json:"gracePeriod"`
	// CloudflaredArgs are more of cloudflared's tunnel flags (the chart's
	// cloudflared.extraArgs), before "run".
	CloudflaredArgs []string `json:"cloudflaredArgs,omitempty"`
	// TerminationGracePeriodSeconds must outlast GracePeriod and then
	// the proxy's own drain.
	TerminationGracePeriodSeconds int64                       `json:"terminationGracePeriodSeconds"`
	ProxyResources                v1alpha1.ContainerResources `json:"proxyResources"`
	CloudflaredResources          v1alpha1.ContainerResources `json:"cloudflaredResources"`
	// NetworkPolicy, when set, gives every plane a NetworkPolicy as the
	// chart gives its proxies (the chart's networkPolicy.enabled).
	NetworkPolicy *NetworkPolicy `json:"networkPolicy,omitempty"`
}

// NetworkPolicy is what a plane's NetworkPolicy lets in: nothing but
// metrics scrapes from MetricsFrom (none while it is empty), since
// cloudflared dials out and hands requests to the proxy inside the Pod.
type NetworkPolicy struct {
	MetricsFrom []networkingv1.NetworkPolicyPeer `json:"metricsFrom,omitempty"`
	// RelayFrom are the shared proxies, which alone may reach the relay
	// port of a plane they relay to (GatewayConfig classTunnel); empty
	// lets any peer try, and the relay's client certificate decides.
	RelayFrom []networkingv1.NetworkPolicyPeer `json:"relayFrom,omitempty"`
}

// Secrets are the Secrets a plane's Pods mount, in the Gateway's
// namespace.
type Secrets struct {
	// Credentials holds KeyConfigToken and KeyCA: the plane's own
	// credential for the config API, and the CA that signed the API's
	// certificate (CredentialsSecret renders it).
	Credentials string
	// TunnelToken and TunnelTokenKey hold the tunnel token cloudflared
	// runs with.
	TunnelToken    string
	TunnelTokenKey string
}

// Plane is one Gateway's dedicated data plane, to render.
type Plane struct {
	Gateway *gwv1.Gateway
	Params  v1alpha1.GatewayConfigSpec
	Install Install
	Secrets Secrets
	// Ports are the Gateway's served listener ports, which a plane that
	// serves in the cluster (Params.ServesInCluster) exposes on its
	// Service. They are not in the Pod template, so a listener added or
	// removed does not roll the Pods: the proxy opens and closes its
	// sockets as its config changes.
	Ports []Port
	// ClusterIP, when set, is the Service's ClusterIP: the Gateway's
	// address from the controller's address pool.
	ClusterIP string
	// Relay, for a plane the shared proxies relay to (Params.Relayed), are
	// its relay credentials, made by the controller and kept in its
	// credentials Secret. The Pods are made anew when they change, since
	// the proxy reads its certificate at start.
	Relay *RelayCredentials
	// TunnelRotatedAt is when the credential of the plane's own tunnel
	// was last rotated (v1alpha1.AnnotationRotatedAt on its token
	// Secret), or "": on the Pod template, so a rotation rolls the Pods,
	// one at a time, onto the new token.
	TunnelRotatedAt string
}

// Port is a listener port and whether its listeners terminate TLS.
type Port struct {
	Port int32
	TLS  bool
}

// Labels of ours on every object of a plane.
const (
	LabelGatewayName  = "gateway.networking.k8s.io/gateway-name"
	LabelGatewayClass = "gateway.networking.k8s.io/gateway-class-name"
	labelName         = "app.kubernetes.io/name"
	labelComponent    = "app.kubernetes.io/component"
	labelManagedBy    = "app.kubernetes.io/managed-by"
	// ManagedBy is the managed-by label's value, and the field manager
	// the controller applies a plane with.
	ManagedBy = "tunnelgate"
)

// Name is the name of every object of a Gateway's plane: GEP-1762's
// "<gateway>-<class>", or, beyond 63 characters, its first 54 and a hash
// of the whole.
func Name(gateway, class string) string {
	n := gateway + "-" + class
	if len(n) <= 63 {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return strings.TrimRight(n[:54], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
}

// Objects renders the plane's objects, in the order they are best
// applied: those the Deployment refers to first.
func Objects(p Plane) ([]runtime.Object, error) {
	if err := check(p); err != nil {
		return nil, fmt.Errorf("gateway %s/%s: %w", p.Gateway.Namespace, p.Gateway.Name, err)
	}
	objs := []runtime.Object{serviceAccount(p), service(p), deployment(p), podDisruptionBudget(p)}
	if p.Params.Autoscaling != nil {
		objs = append(objs, horizontalPodAutoscaler(p))
	}
	if p.Install.NetworkPolicy != nil {
		objs = append(objs, networkPolicy(p))
	}
	return objs, nil
}

// check refuses what the CRD refuses, for a GatewayConfig that has not
// been through it (standalone files, an older CRD).
func check(p Plane) error {
	if p.Params.DataPlane != v1alpha1.DataPlaneDedicated {
		return fmt.Errorf("dataPlane is %q, not %s", p.Params.DataPlane, v1alpha1.DataPlaneDedicated)
	}
	if r := p.Params.Replicas; r != nil && (*r < 1 || *r > v1alpha1.MaxConnectorsPerTunnel) {
		return fmt.Errorf("replicas %d: want 1 to %d", *r, v1alpha1.MaxConnectorsPerTunnel)
	}
	if a := p.Params.Autoscaling; a != nil {
		if p.Params.Replicas != nil {
			return fmt.Errorf("set replicas or autoscaling, not both")
		}
		if a.MinReplicas < 1 || a.MinReplicas > a.MaxReplicas || a.MaxReplicas > v1alpha1.MaxConnectorsPerTunnel {
			return fmt.Errorf("autoscaling %d to %d: want 1 <= min <= max <= %d", a.MinReplicas, a.MaxReplicas, v1alpha1.MaxConnectorsPerTunnel)
		}
	}
	for _, a := range p.Params.ProxyArgs {
		name, _, ok := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !ok || !slices.Contains(v1alpha1.AllowedProxyFlags, name) {
			return fmt.Errorf("proxyArgs %q: want -name=value, name one of %s", a, strings.Join(v1alpha1.AllowedProxyFlags, ", "))
		}
	}
	return nil
}

// selector picks the plane's Pods.
func selector(p Plane) map[string]string {
	return map[string]string{
		labelName:         "tunnelgate",
		labelComponent:    "proxy",
		LabelGatewayName:  p.Gateway.Name,
		LabelGatewayClass: string(p.Gateway.Spec.GatewayClassName),
	}
}

// labels are the infrastructure labels with ours over them.
func labels(p Plane) map[string]string {
	out := map[string]string{}
	if inf := p.Gateway.Spec.Infrastructure; inf != nil {
		for k, v := range inf.Labels {
			out[string(k)] = string(v)
		}
	}
	maps.Copy(out, selector(p))
	out[labelManagedBy] = ManagedBy
	return out
}

func annotations(p Plane) map[string]string {
	inf := p.Gateway.Spec.Infrastructure
	if inf == nil || len(inf.Annotations) == 0 {
		return nil
	}
	out := make(map[string]string, len(inf.Annotations))
	for k, v := range inf.Annotations {
		out[string(k)] = string(v)
	}
	return out
}

// meta is every object's metadata: name, namespace, labels, annotations
// and the Gateway as its controller owner.
func meta(p Plane) metav1.ObjectMeta {
	g := p.Gateway
	yes := true
	return metav1.ObjectMeta{
		Name:        Name(g.Name, string(g.Spec.GatewayClassName)),
		Namespace:   g.Namespace,
		Labels:      labels(p),
		Annotations: annotations(p),
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: gwv1.GroupVersion.String(), Kind: "Gateway", Name: g.Name, UID: g.UID,
			Controller: &yes, BlockOwnerDeletion: &yes,
		}},
	}
}
