// This file defines LoadBalancingPolicy, which puts a hostname behind a shared Cloudflare load balancer.

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// KindLoadBalancingPolicy is the kind of LoadBalancingPolicy.
const KindLoadBalancingPolicy = "LoadBalancingPolicy"

// LoadBalancingPolicy makes this cluster one origin of a Cloudflare load
// balancer on a hostname it serves (docs/multi-cluster.md): the cluster's
// tunnel joins a pool shared, by name, with the other clusters that name
// it, and a load balancer on the hostname steers visitors between the
// pools, failing over in order.
//
// It attaches to its targets the Gateway API way (policy attachment):
// targetRefs name Gateways (sectionName: a listener) or HTTPRoutes in the
// policy's namespace, and the hostname must be one a target serves.
// Between policies naming the same hostname the oldest applies and the
// others are Conflicted.
type LoadBalancingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LoadBalancingPolicySpec `json:"spec"`
	Status gwv1.PolicyStatus       `json:"status,omitempty"`
}

// LoadBalancingPolicySpec is the load balancer a hostname is put behind,
// and this cluster's place in it.
type LoadBalancingPolicySpec struct {
	// TargetRefs are the Gateways (sectionName: a listener) and
	// HTTPRoutes that serve Hostname in this cluster.
	TargetRefs []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`
	// Hostname is the load balanced hostname: a listener's hostname, one
	// a listener's wildcard covers, or one of an HTTPRoute's hostnames.
	Hostname string `json:"hostname"`
	// Pool is the pool this cluster's tunnel joins as an origin; the
	// clusters naming the same pool share it. Letters, digits, '-' and
	// '_'.
	Pool string `json:"pool"`
	// FailoverPools are the load balancer's pools in failover order; they
	// must contain Pool. Default: [Pool].
	FailoverPools []string `json:"failoverPools,omitempty"`
	// Weight is this cluster's share of its pool's traffic, as a percent
	// (0 to 100). Default 100.
	Weight *int32 `json:"weight,omitempty"`
	// Enabled: false keeps this cluster's origin in the pool but sends it
	// nothing (draining). Default true.
	Enabled *bool `json:"enabled,omitempty"`
	// Steering is how the load balancer picks a pool: Off (failover
	// order), Random, Geo, DynamicLatency, Proximity,
	// LeastOutstandingRequests or LeastConnections. Default Off.
	Steering LBSteering `json:"steering,omitempty"`
	// SessionAffinity keeps a visitor on the origin that served it first.
	// Default: none.
	SessionAffinity *LBSessionAffinity `json:"sessionAffinity,omitempty"`
	// HealthCheck is how each origin is probed. Defaults apply field by
	// field.
	HealthCheck *LBHealthCheck `json:"healthCheck,omitempty"`
	// DeleteUnused lets the controller delete the pool, monitor and load
	// balancer it created once no cluster's origin remains in the pool.
	// Without it they stay.
	DeleteUnused bool `json:"deleteUnused,omitempty"`
}

// LBSteering is a load balancer's steering policy.
type LBSteering string

// The steering policies.
const (
	SteeringOff                      LBSteering = "Off"
	SteeringRandom                   LBSteering = "Random"
	SteeringGeo                      LBSteering = "Geo"
	SteeringDynamicLatency           LBSteering = "DynamicLatency"
	SteeringProximity                LBSteering = "Proximity"
	SteeringLeastOutstandingRequests LBSteering = "LeastOutstandingRequests"
	SteeringLeastConnections         LBSteering = "LeastConnections"
)

// LBAffinity is a kind of session affinity.
type LBAffinity string

// The kinds of session affinity.
const (
	AffinityNone     LBAffinity = "None"
	AffinityCookie   LBAffinity = "Cookie"
	AffinityIPCookie LBAffinity = "IPCookie"
)

// LBSessionAffinity is how a visitor stays on one origin.
type LBSessionAffinity struct {
	// Type is None, Cookie (Cloudflare's cookie names the origin) or
	// IPCookie (the cookie, else the visitor's address). Default None.
	Type LBAffinity `json:"type,omitempty"`
	// TTL is how long the affinity lasts, a Gateway API duration ("1h");
	// empty: Cloudflare's default.
	TTL *gwv1.Duration `json:"ttl,omitempty"`
}

// LBHealthCheck is the monitor's probe of each origin, which the proxies
// answer from the state of the hostname's routes.
type LBHealthCheck struct {
	// Path is the path probed: absolute, in normal form. Default
	// DefaultLBHealthPath.
	Path string `json:"path,omitempty"`
	// Interval between probes, at least 10s. Default 60s.
	Interval *gwv1.Duration `json:"interval,omitempty"`
	// Timeout of one probe, shorter than Interval. Default 5s.
	Timeout *gwv1.Duration `json:"timeout,omitempty"`
	// Retries before an origin is marked unhealthy, 0 to 5. Default 2.
	Retries *int32 `json:"retries,omitempty"`
	// ExpectedCodes is the status a healthy origin answers: "200" or
	// "2xx". Default "200".
	ExpectedCodes string `json:"expectedCodes,omitempty"`
}

// Defaults of a LoadBalancingPolicy's fields.
const (
	DefaultLBHealthPath     = "/.well-known/tunnelgate/health"
	DefaultLBWeight         = 100
	DefaultLBInterval       = "60s"
	DefaultLBTimeout        = "5s"
	DefaultLBRetries        = 2
	DefaultLBExpectedCodes  = "200"
	DefaultLBSteering       = SteeringOff
	DefaultLBAffinity       = AffinityNone
	MinLBIntervalSeconds    = 10
	MaxLBRetries            = 5
	MaxLBAffinityTTLSeconds = 7 * 24 * 3600
)

// LoadBalancingPolicyList is a list of LoadBalancingPolicies.
type LoadBalancingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LoadBalancingPolicy `json:"items"`
}
