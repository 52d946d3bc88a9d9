// This file defines the Output.

package translate

import (
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Output is everything translate decides. Writers turn it into API calls;
// nothing in it has been applied yet. An Output is read-only: with a Cache,
// the next translation shares the parts that did not change.
type Output struct {
	// Config is what the proxies serve: every Gateway's listeners, those
	// of Planes included. ProxyConfigs splits it into what each set of
	// proxies may see.
	Config proxycfg.Config

	// Planes are the accepted Gateways served by a data plane of their
	// own (a GatewayConfig with dataPlane Dedicated).
	Planes map[types.NamespacedName]*Plane

	// Statuses, only for the objects tunnelgate manages. Route and policy
	// statuses hold our entries only (parentRefs we own, ancestors we
	// reported); a writer merges them with other controllers' entries.
	GatewayClasses        map[string]*GatewayClassResult
	Gateways              map[types.NamespacedName]*gwv1.GatewayStatus
	ListenerSets          map[types.NamespacedName]*gwv1.ListenerSetStatus
	HTTPRoutes            map[types.NamespacedName][]gwv1.RouteParentStatus
	GRPCRoutes            map[types.NamespacedName][]gwv1.RouteParentStatus
	TCPRoutes             map[types.NamespacedName][]gwv1.RouteParentStatus
	TLSRoutes             map[types.NamespacedName][]gwv1.RouteParentStatus
	BackendTLSPolicies    map[types.NamespacedName][]gwv1.PolicyAncestorStatus
	AccessPolicies        map[types.NamespacedName][]gwv1.PolicyAncestorStatus
	LoadBalancingPolicies map[types.NamespacedName][]gwv1.PolicyAncestorStatus
	DNSPolicies           map[types.NamespacedName][]gwv1.PolicyAncestorStatus

	// Hostnames are the public hostnames of accepted routes, sorted, with
	// what each needs from the tunnel; those of Planes are theirs alone.
	Hostnames []Hostname
	// AccessApps are the Access applications AccessPolicies ask the
	// controller to keep (spec.application), by policy.
	AccessApps []AccessApp
	// LoadBalancers are the load balanced hostnames LoadBalancingPolicies
	// ask for, by policy; the controller hands each to the tunnels that
	// route its hostname.
	LoadBalancers []LoadBalancing

	// Events worth telling a user, in a stable order.
	Events []Event

	// A patched translation (patch.go) names the output it patched and the
	// statuses it replaced (routes', and the Gateways' and ListenerSets'
	// whose attachedRoutes a route added or deleted changed), so Diff
	// against that output looks at those alone.
	patchOf                      *Output
	touchedHTTP, touchedGRPC     []types.NamespacedName
	touchedGateways, touchedSets []types.NamespacedName
}

// GatewayClassResult is a GatewayClass's status and whether it must carry
// the in-use finalizer (some Gateway uses it).
type GatewayClassResult struct {
	Status    gwv1.GatewayClassStatus `json:"status"`
	Finalizer bool                    `json:"finalizer"`
}

// GatewayClassFinalizer keeps a GatewayClass from being deleted while
// Gateways use it.
const GatewayClassFinalizer = "gateway-exists-finalizer.gateway.networking.k8s.io"

// Hostname is one public hostname and what the tunnel must do for it.
type Hostname struct {
	Name string `json:"name"`
	// GRPC is set when a GRPCRoute serves the hostname: the tunnel must
	// reach the origin over HTTP/2 (trailers).
	GRPC bool `json:"grpc,omitempty"`
	// HTTP is set when an HTTPRoute serves the hostname.
	HTTP bool `json:"http,omitempty"`
	// Classes are the GatewayClasses whose Gateways serve it, sorted: the
	// tunnels that must route it.
	Classes []string `json:"classes,omitempty"`
	// Stream is set when a TCPRoute or TLSRoute serves the hostname
	// through the tunnel; then GRPC and HTTP are not (a hostname is one
	// ingress rule, and so one kind of service).
	Stream *StreamService `json:"stream,omitempty"`
	// UnmanagedDNS is set when a DNSPolicy leaves the hostname's DNS to
	// others (dnspolicy.go): the tunnel routes it, and its sync creates
	// no record for it and removes those it owns.
	UnmanagedDNS bool `json:"unmanagedDNS,omitempty"`
}

// StreamService is how the tunnel carries a hostname that a TCPRoute or
// TLSRoute serves: cloudflared takes the streams visitors open with
// `cloudflared access` (or Access's browser rendering) to the proxy's
// origin port for that route, which relays them to the route's backends.
type StreamService struct {
	// Route names the route, "TCPRoute namespace/name", for messages.
	Route string `json:"route"`
	// Port is the route's proxycfg.Route.OriginPort.
	Port int `json:"port"`
	// Scheme is the ingress rule's service scheme: "tcp", "ssh" or "rdp".
	Scheme string `json:"scheme"`
	// Access, when set, makes cloudflared check each stream's Access
	// token before it dials the origin (the rule's originRequest.access):
	// the proxy cannot, as a raw stream carries no token it can read.
	Access *StreamAccess `json:"access,omitempty"`
}

// StreamAccess is what cloudflared checks of a stream's Access token.
type StreamAccess struct {
	// TeamName is the team's name, the first label of its domain
	// ("<team>.cloudflareaccess.com"); never empty (cloudflared fails
	// every token against an empty one).
	TeamName string `json:"teamName"`
	// Audiences are the Access applications' AUD tags a token may carry;
	// at least one.
	Audiences []string `json:"audiences"`
}

// Event is a Kubernetes event to record on an object.
type Event struct {
	Kind      string `json:"kind"` // GatewayClass, Gateway, HTTPRoute, ...
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Type      string `json:"type"` // Normal or Warning
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}
