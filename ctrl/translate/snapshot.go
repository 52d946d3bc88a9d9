// This file defines the translator's input.

package translate

import (
	"net/netip"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// DefaultControllerName is the GatewayClass controllerName tunnelgate
// answers to unless told otherwise.
const DefaultControllerName = "tunnelgate.dev/controller"

// Input is everything translate reads: the objects, and the few facts that
// do not come from objects. Translate never changes it.
type Input struct {
	Snapshot

	// ControllerName selects the GatewayClasses that are ours.
	ControllerName string
	// Now stamps lastTransitionTime on conditions whose status changes.
	Now time.Time
	// Provisioning says who serves a Gateway that asks for a Dedicated
	// data plane; the zero value, ServeDedicatedHere, is standalone mode's.
	Provisioning Provisioning
	// BundleVersion is the Gateway API CRD bundle version installed in the
	// cluster (the gateway.networking.k8s.io/bundle-version annotation).
	// Empty is taken as supported: standalone mode has no CRDs. A
	// controller that finds the annotation missing must pass a value that
	// says so (e.g. "unknown"), which the spec requires be unsupported.
	BundleVersion string
	// Addresses are published on every programmed Gateway's status: the
	// tunnel's hostname in a cluster, the listen address in standalone mode.
	Addresses []gwv1.GatewayStatusAddress
	// AddressPool, when valid, gives every accepted Gateway an IP address of
	// its own, published first on its status and put on its listeners in
	// the config, for proxies that serve Gateway addresses (in-cluster
	// clients, the conformance suite). A Gateway keeps the address its
	// status holds while it stays in the pool (addresses.go).
	AddressPool netip.Prefix
	// Tunnels are the Cloudflare sync's reports, by GatewayClass name, and
	// for a Gateway with a plane and a tunnel of its own by
	// PlaneTunnelKey; a class without one (standalone mode, no GatewayClassConfig) gets no
	// tunnel address and no DNS condition.
	Tunnels map[string]*TunnelState
	// Planes are what the Deployments of Gateways' dedicated planes say
	// (ctrl/planes), by Gateway; a plane without an entry has no
	// Deployment yet.
	Planes map[types.NamespacedName]*PlaneState
	// TunnelProtocols are the protocols the proxies' cloudflared sidecars
	// report running the tunnel with; a GRPCRoute through a tunnel needs
	// all of them to be "http2".
	TunnelProtocols []string
	// AccessKeys are the Cloudflare Access teams' signing keys, by team
	// domain, as the controller fetches them; a team without an entry has
	// none yet, and its protected rules refuse every request.
	AccessKeys map[string]*AccessKeys
	// AnyEndpointAddress accepts EndpointSlice addresses the API server
	// would refuse (loopback): standalone mode has no API server, and its
	// backends run on 127.0.0.1.
	AnyEndpointAddress bool
}

// Snapshot holds the objects of one translation. Slices may be in any
// order; translate sorts what it needs, so the output is deterministic.
type Snapshot struct {
	GatewayClasses        []*gwv1.GatewayClass
	Gateways              []*gwv1.Gateway
	ListenerSets          []*gwv1.ListenerSet
	HTTPRoutes            []*gwv1.HTTPRoute
	GRPCRoutes            []*gwv1.GRPCRoute
	TCPRoutes             []*gwv1.TCPRoute
	TLSRoutes             []*gwv1.TLSRoute
	ReferenceGrants       []*gwv1.ReferenceGrant
	BackendTLSPolicies    []*gwv1.BackendTLSPolicy
	Services              []*corev1.Service
	EndpointSlices        []*discoveryv1.EndpointSlice
	Namespaces            []*corev1.Namespace
	Secrets               []*corev1.Secret
	ConfigMaps            []*corev1.ConfigMap
	ClusterTrustBundles   []*certificatesv1.ClusterTrustBundle
	GatewayClassConfigs   []*v1alpha1.GatewayClassConfig
	GatewayConfigs        []*v1alpha1.GatewayConfig
	ExternalBackends      []*v1alpha1.ExternalBackend
	AccessPolicies        []*v1alpha1.AccessPolicy
	LoadBalancingPolicies []*v1alpha1.LoadBalancingPolicy
	DNSPolicies           []*v1alpha1.DNSPolicy
}
