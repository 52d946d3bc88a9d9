// Package v1alpha1 holds tunnelgate's own custom resources, group
// tunnelgate.dev, version v1alpha1:
//
//   - GatewayClassConfig (cluster-scoped) parameterises a GatewayClass
//     through its parametersRef: Cloudflare credentials, the tunnel, DNS
//     ownership and the proxies' origin listeners.
//   - GatewayConfig (namespaced) parameterises one Gateway through its
//     infrastructure.parametersRef: the shared proxies or a data plane of
//     its own, and that plane's size, images and tunnel (gatewayconfig.go).
//   - ExternalBackend (namespaced) is a backendRef target outside the
//     cluster, addressed by DNS name or IP.
//   - AccessPolicy (namespaced) puts Gateways, routes or rules behind
//     Cloudflare Access (accesspolicy.go).
//   - LoadBalancingPolicy (namespaced) makes this cluster an origin of a
//     Cloudflare load balancer on a hostname (loadbalancingpolicy.go).
//   - DNSPolicy (namespaced) leaves the DNS records of some hostnames to
//     others (dnspolicy.go).
//
// Gateway API types come from sigs.k8s.io/gateway-api and are not redefined.
package v1alpha1

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tunnelgate/tunnelgate/api/origin"
)

// Group and Version of every type in this package.
const (
	Group   = "tunnelgate.dev"
	Version = "v1alpha1"
)

// Kinds, as they appear in parametersRef and backendRefs.
const (
	KindGatewayClassConfig = "GatewayClassConfig"
	KindExternalBackend    = "ExternalBackend"
)

// SchemeGroupVersion is the group and version of this package's types.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme registers the types with a runtime.Scheme (client-go needs it).
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&GatewayClassConfig{}, &GatewayClassConfigList{},
		&GatewayConfig{}, &GatewayConfigList{},
		&ExternalBackend{}, &ExternalBackendList{},
		&AccessPolicy{}, &AccessPolicyList{},
		&LoadBalancingPolicy{}, &LoadBalancingPolicyList{},
		&DNSPolicy{}, &DNSPolicyList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// GatewayClassConfig holds what a GatewayClass needs to run on Cloudflare.
// Every field is optional in standalone mode, which has no Cloudflare.
type GatewayClassConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GatewayClassConfigSpec `json:"spec,omitempty"`
}

// GatewayClassConfigSpec is the desired configuration.
type GatewayClassConfigSpec struct {
	// CredentialsRef names the Secret holding the Cloudflare API token.
	CredentialsRef *SecretKeyRef `json:"credentialsRef,omitempty"`
	// AccountID is the Cloudflare account. When empty it is discovered, which
	// works only when the token sees exactly one account.
	AccountID string `json:"accountID,omitempty"`
	// Tunnel is the Cloudflare Tunnel the Gateways of this class use.
	Tunnel *TunnelRef `json:"tunnel,omitempty"`
	// DNS controls the CNAME records of route hostnames.
	DNS *DNSSettings `json:"dns,omitempty"`
	// Origin configures the proxies' listeners cloudflared connects to.
	Origin *OriginSettings `json:"origin,omitempty"`
	// DefaultGatewayConfigRef names the GatewayConfig of this class's
	// Gateways that name none in spec.infrastructure.parametersRef.
	// Unset, they are served by the shared proxies. It must not name a
	// tunnel: a tunnel of its own serves one Gateway.
	DefaultGatewayConfigRef *ObjectRef `json:"defaultGatewayConfigRef,omitempty"`
	// GatewayTunnels limits the tunnels of the class's account that a
	// Gateway's GatewayConfig may name as its own. Unset, it may name any
	// tunnel that no other class or Gateway of this controller holds.
	GatewayTunnels *GatewayTunnelPolicy `json:"gatewayTunnels,omitempty"`
}

// GatewayTunnelPolicy is which tunnels a class's Gateways may name as
// their own. A tunnel named by its token (tokenSecretRef) is always
// allowed: whoever holds a tunnel's token can run it anyway.
type GatewayTunnelPolicy struct {
	// NamePrefix is the prefix every tunnel.name must start with. The text
	// "{namespace}" in it stands for the Gateway's namespace, so
	// "{namespace}-" keeps each namespace to tunnels named after it.
	NamePrefix string `json:"namePrefix,omitempty"`
	// AllowIDs lets tunnel.id name an existing tunnel of the account.
	AllowIDs bool `json:"allowIDs,omitempty"`
}

// NamePrefixFor is NamePrefix for a Gateway in namespace.
func (p *GatewayTunnelPolicy) NamePrefixFor(namespace string) string {
	return strings.ReplaceAll(p.NamePrefix, "{namespace}", namespace)
}

// Refuses says why the policy refuses the tunnel a Gateway in namespace
// names, or ""; a nil policy refuses nothing.
func (p *GatewayTunnelPolicy) Refuses(namespace string, t *GatewayTunnel) string {
	switch {
	case p == nil || t == nil:
		return ""
	case t.ID != "" && !p.AllowIDs:
		return "tunnel.id: a Gateway's own tunnel is to be named by name or token, not by ID (gatewayTunnels.allowIDs)"
	case t.Name != "" && !strings.HasPrefix(t.Name, p.NamePrefixFor(namespace)):
		return fmt.Sprintf("tunnel.name %q: the names of Gateways' tunnels in namespace %s are to start with %q (gatewayTunnels.namePrefix)",
			t.Name, namespace, p.NamePrefixFor(namespace))
	}
	return ""
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// SecretKeyRef points at one key of a Secret.
type SecretKeyRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Key defaults to "token".
	Key string `json:"key,omitempty"`
}

// TunnelRef names an existing tunnel by ID, or a tunnel to create by name.
// Exactly one of the two is set.
type TunnelRef struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// TokenSecretRef, when set, is where the controller keeps the tunnel's
	// token (the cloudflared sidecars' credential), written whenever it
	// differs.
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef,omitempty"`
	// CredentialRotation rotates the tunnel's secret on a schedule
	// (rotation.go); it needs TokenSecretRef, the Secret the controller
	// writes the new token to.
	CredentialRotation *CredentialRotation `json:"credentialRotation,omitempty"`
}

// DNSSettings says which hostnames get records and how ownership is marked.
type DNSSettings struct {
	// Enabled turns DNS management on. Off by default.
	Enabled bool `json:"enabled,omitempty"`
	// Zones limits records to these zones; empty means every zone the token
	// can edit.
	Zones []string `json:"zones,omitempty"`
	// OwnerID marks records as ours in their ownership TXT record. It
	// defaults to the GatewayClass name.
	OwnerID string `json:"ownerID,omitempty"`
	// Proxied sets the CNAMEs' proxied flag; default true.
	Proxied *bool `json:"proxied,omitempty"`
	// Takeover lets us replace records on our hostnames that carry no
	// ownership record. Off by default: a foreign record is reported, not
	// touched.
	Takeover bool `json:"takeover,omitempty"`
}

// OriginSettings are the proxies' origin listeners as cloudflared sees them.
type OriginSettings struct {
	// Port of the plain HTTP origin listener (default 8080).
	Port int32 `json:"port,omitempty"`
	// Socket, when set, is the path of a unix socket, shared by the proxy
	// and cloudflared, where the plain HTTP origin listener is: HTTP
	// hostnames then go to unix:<Socket> instead of Port. gRPC hostnames
	// still go to TLSPort. cloudflared answers every WebSocket to a unix:
	// service 502 (cloudflare/cloudflared#560).
	Socket string `json:"socket,omitempty"`
	// TLSPort of the TLS origin listener used for gRPC (default 8443).
	TLSPort int32 `json:"tlsPort,omitempty"`
	// ServerName is the name cloudflared expects in the TLS origin
	// listener's certificate (default DefaultOriginServerName).
	ServerName string `json:"serverName,omitempty"`
	// CAPool is the path, inside the cloudflared container, of the CA that
	// signed that certificate (default DefaultOriginCAPool).
	CAPool string `json:"caPool,omitempty"`
}

// Defaults of OriginSettings. They are defined in api/origin, which
// imports nothing, so the proxy shares them without this package's
// Kubernetes dependencies.
const (
	DefaultOriginPort       = origin.DefaultPort
	DefaultOriginTLSPort    = origin.DefaultTLSPort
	DefaultOriginServerName = origin.DefaultServerName
	DefaultOriginCAPool     = origin.DefaultCAPool
)

// GatewayClassConfigList is a list of GatewayClassConfigs.
type GatewayClassConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayClassConfig `json:"items"`
}

// ExternalBackend is a backend outside the cluster: a DNS name or an IP and
// a port. Routes reference it in backendRefs with group tunnelgate.dev and
// kind ExternalBackend; a BackendTLSPolicy may target it like a Service.
type ExternalBackend struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExternalBackendSpec   `json:"spec,omitempty"`
	Status ExternalBackendStatus `json:"status,omitempty"`
}

// ExternalBackendSpec is where the backend lives and how to speak to it.
type ExternalBackendSpec struct {
	// Host is a DNS name or an IP address.
	Host string `json:"host"`
	// Port is the backend's TCP port.
	Port int32 `json:"port"`
	// Protocol is http (default), h2c or https. https without a
	// BackendTLSPolicy verifies the backend against the system roots with
	// Host as the server name.
	Protocol string `json:"protocol,omitempty"`
}

// Protocols of an ExternalBackend.
const (
	ProtocolHTTP  = "http"
	ProtocolH2C   = "h2c"
	ProtocolHTTPS = "https"
)

// ExternalBackendStatus reports whether the spec is usable.
type ExternalBackendStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ExternalBackendList is a list of ExternalBackends.
type ExternalBackendList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExternalBackend `json:"items"`
}
