// This file defines GatewayConfig, a Gateway's parameters: its data plane
// and tunnel.

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KindGatewayConfig is the kind a Gateway's infrastructure.parametersRef
// names.
const KindGatewayConfig = "GatewayConfig"

// GatewayConfig parameterises one Gateway, named by its
// spec.infrastructure.parametersRef (group tunnelgate.dev, kind
// GatewayConfig, in the Gateway's namespace): whether the Gateway is
// served by the shared proxies or by a data plane of its own, that plane's
// size, images and resources, and its tunnel.
type GatewayConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GatewayConfigSpec `json:"spec,omitempty"`
}

// GatewayConfigSpec is the desired data plane of a Gateway. Every field
// but DataPlane and EncodedSlashes is about a Dedicated plane; the CRD
// refuses them with Shared.
type GatewayConfigSpec struct {
	// DataPlane is Shared (default: the proxies the chart installs serve
	// the Gateway through its class's tunnel) or Dedicated (the controller
	// runs proxies for this Gateway alone).
	DataPlane string `json:"dataPlane,omitempty"`
	// Replicas of the dedicated proxies (default DefaultReplicas, at most
	// MaxConnectorsPerTunnel). Not with Autoscaling.
	Replicas *int32 `json:"replicas,omitempty"`
	// Autoscaling, instead of Replicas, scales the proxies on CPU use.
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`
	// Proxy is the tunnelgate proxy container: its image (default the
	// controller's own) and resources.
	Proxy *ContainerSettings `json:"proxy,omitempty"`
	// Cloudflared is the cloudflared container: its image (default the
	// one the controller was installed with) and resources.
	Cloudflared *ContainerSettings `json:"cloudflared,omitempty"`
	// Tunnel, when set, is a tunnel of the Gateway's own. Unset, and
	// without ClassTunnel, the plane serves in the cluster only
	// (InClusterOnly), which its class must allow by having no tunnel
	// either.
	Tunnel *GatewayTunnel `json:"tunnel,omitempty"`
	// ClassTunnel, instead of Tunnel, publishes the Gateway's hostnames
	// through its class's tunnel: the shared proxies take its requests
	// from the class's cloudflared and relay them, over mutual TLS, to
	// this plane, which alone holds the Gateway's routes, certificates
	// and session keys.
	ClassTunnel bool `json:"classTunnel,omitempty"`
	// ServeInCluster, with Tunnel or ClassTunnel, also serves the
	// Gateway's listeners to clients in the cluster, on its listener
	// ports at the plane's Service, as a plane without a tunnel does.
	ServeInCluster bool `json:"serveInCluster,omitempty"`
	// ProxyArgs are extra proxy flags, each "-name=value", of
	// AllowedProxyFlags only.
	ProxyArgs []string `json:"proxyArgs,omitempty"`
	// EncodedSlashes is what an encoded slash or backslash in a request
	// path ("%2F", "%5C", or '\' as sent) means on the Gateway's
	// listeners, on any data plane: Reject (400), Decode (read as '/'
	// before routing) or Keep (data inside a path element, for
	// applications whose paths carry them; a backend that decodes them
	// may then serve what another rule, or Cloudflare Access on it,
	// covers). Unset, the proxies' default applies (their
	// -encoded-slashes flag: Reject unless changed).
	EncodedSlashes string `json:"encodedSlashes,omitempty"`
}

// ServesInCluster says whether a Dedicated plane serves the Gateway's
// listeners on its Service, to clients in the cluster: it does when asked
// (ServeInCluster), and when no tunnel leads to it (InClusterOnly).
func (s *GatewayConfigSpec) ServesInCluster() bool { return s.ServeInCluster || s.InClusterOnly() }

// InClusterOnly says whether a Dedicated plane has no tunnel leading to
// it, its own or its class's, and so serves in the cluster alone.
func (s *GatewayConfigSpec) InClusterOnly() bool { return s.Tunnel == nil && !s.ClassTunnel }

// Relayed says whether a Dedicated plane takes its requests from the
// shared proxies, which receive them through the class's tunnel
// (ClassTunnel).
func (s *GatewayConfigSpec) Relayed() bool { return s.Tunnel == nil && s.ClassTunnel }

// Data plane modes.
const (
	DataPlaneShared    = "Shared"
	DataPlaneDedicated = "Dedicated"
)

// Sizes of a dedicated data plane.
const (
	DefaultReplicas = 2
	// MaxConnectorsPerTunnel is Cloudflare's limit of cloudflared replicas
	// (connectors) one tunnel takes, so of proxies one plane can have.
	MaxConnectorsPerTunnel = 25
	// DefaultTargetCPUUtilizationPercentage is the autoscaler's target.
	DefaultTargetCPUUtilizationPercentage = 70
)

// AllowedProxyFlags are the proxy flags ProxyArgs may set: logging, how
// much the metrics say of each route (metrics-detail), and the limits and
// timeouts of the request path. The rest (listeners,
// certificates, the controller's address and credential) the controller
// sets itself.
var AllowedProxyFlags = []string{
	"access-log",
	"access-log-omit-query",
	"access-log-queue",
	"buffer-memory",
	"client-body-timeout",
	"client-write-timeout",
	"log-format",
	"log-level",
	"max-streams",
	"metrics-detail",
	"request-buffer",
	"stream-connect-timeout",
	"stream-half-close-timeout",
	"stream-handshake-timeout",
	"stream-idle-timeout",
	"upstream-dial-timeout",
	"upstream-idle-timeout",
	"upstream-max-conns",
	"upstream-max-conns-per-client",
	"upstream-max-idle",
	"upstream-max-upload-conns",
}

// Autoscaling bounds a HorizontalPodAutoscaler of the proxies.
type Autoscaling struct {
	MinReplicas int32 `json:"minReplicas"`
	MaxReplicas int32 `json:"maxReplicas"`
	// TargetCPUUtilizationPercentage is the average CPU use the autoscaler
	// aims at, in percent of the proxies' CPU requests (default 70).
	TargetCPUUtilizationPercentage int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// ContainerSettings are one container's image and resources.
type ContainerSettings struct {
	Image     string              `json:"image,omitempty"`
	Resources *ContainerResources `json:"resources,omitempty"`
}

// ContainerResources are a container's requests and limits, as in a Pod,
// of cpu, memory and ephemeral-storage.
type ContainerResources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}

// GatewayTunnel is a Gateway's own tunnel: exactly one of Name, ID and
// TokenSecretRef.
type GatewayTunnel struct {
	// Name is a tunnel the controller creates, or takes over when the
	// account has one by that name.
	Name string `json:"name,omitempty"`
	// ID is an existing tunnel.
	ID string `json:"id,omitempty"`
	// TokenSecretRef is a Secret in the Gateway's namespace holding an
	// existing tunnel's token.
	TokenSecretRef *LocalSecretKeyRef `json:"tokenSecretRef,omitempty"`
	// DeleteWithGateway deletes the tunnel when the Gateway is deleted,
	// only if the controller created it for this Gateway (Name, and no
	// tunnel of that name existed). Off by default: a tunnel outlives its
	// Gateway unless this says otherwise.
	DeleteWithGateway bool `json:"deleteWithGateway,omitempty"`
	// CredentialRotation rotates the tunnel's secret on a schedule
	// (rotation.go); only a tunnel whose token the controller writes (Name
	// or ID, not TokenSecretRef).
	CredentialRotation *CredentialRotation `json:"credentialRotation,omitempty"`
}

// LocalSecretKeyRef is one key of a Secret in the referrer's namespace.
type LocalSecretKeyRef struct {
	Name string `json:"name"`
	// Key defaults to "token".
	Key string `json:"key,omitempty"`
}

// GatewayConfigList is a list of GatewayConfigs.
type GatewayConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayConfig `json:"items"`
}

func (in *GatewayConfig) DeepCopy() *GatewayConfig {
	if in == nil {
		return nil
	}
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	s := &out.Spec
	if in.Spec.Replicas != nil {
		r := *in.Spec.Replicas
		s.Replicas = &r
	}
	if in.Spec.Autoscaling != nil {
		a := *in.Spec.Autoscaling
		s.Autoscaling = &a
	}
	s.Proxy, s.Cloudflared = in.Spec.Proxy.deepCopy(), in.Spec.Cloudflared.deepCopy()
	if in.Spec.Tunnel != nil {
		t := *in.Spec.Tunnel
		if t.TokenSecretRef != nil {
			r := *t.TokenSecretRef
			t.TokenSecretRef = &r
		}
		if t.CredentialRotation != nil {
			r := *t.CredentialRotation
			t.CredentialRotation = &r
		}
		s.Tunnel = &t
	}
	s.ProxyArgs = append([]string(nil), in.Spec.ProxyArgs...)
	return &out
}

func (in *ContainerSettings) deepCopy() *ContainerSettings {
	if in == nil {
		return nil
	}
	out := *in
	if in.Resources != nil {
		out.Resources = &ContainerResources{Requests: in.Resources.Requests.DeepCopy(), Limits: in.Resources.Limits.DeepCopy()}
	}
	return &out
}

func (in *GatewayConfig) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *GatewayConfigList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]GatewayConfig, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopy()
	}
	return &out
}
