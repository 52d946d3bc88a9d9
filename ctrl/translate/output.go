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
	GatewayClasses     map[string]*GatewayClassResult
	Gateways           map[types.NamespacedName]*gwv1.GatewayStatus
	ListenerSets       map[types.NamespacedName]*gwv1.ListenerSetStatus
	HTTPRoutes         map[types.NamespacedName][]gwv1.RouteParentStatus
	GRPCRoutes         map[types.NamespacedName][]gwv1.RouteParentStatus
	BackendTLSPolicies map[types.NamespacedName][]gwv1.PolicyAncestorStatus
	AccessPolicies     map[types.NamespacedName][]gwv1.PolicyAncestorStatus

	// Hostnames are the public hostnames of accepted routes, sorted, with
	// what each needs from the tunnel; those of Planes are theirs alone.
	Hostnames []Hostname
	// AccessApps are the Access applications AccessPolicies ask the
	// controller to keep (spec.application), by policy.
	AccessApps []AccessApp

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
