// This file turns what the Cloudflare sync reports into statuses.

package translate

import (
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TunnelState is what the Cloudflare sync last reported for the tunnel of
// a GatewayClass. Translate turns it into statuses: the class's Accepted,
// its Gateways' addresses and Programmed, and the DNS condition of their
// routes. The Cache compares TunnelStates by value (Equal): a report
// that says what the last one did is the same, whatever its address.
type TunnelState struct {
	// ID is the tunnel's ID, once known.
	ID string
	// Problem is a configuration error only the user can fix (credentials
	// refused, no such tunnel or account): the class is not accepted, or a
	// Gateway with a tunnel of its own is not programmed.
	Problem string
	// NoResources marks a Problem that is one of Cloudflare's limits (the
	// tunnels an account may have).
	NoResources bool
	// Pending says why the tunnel's ingress document is not applied yet;
	// empty once it is.
	Pending string
	// DNS is the state of each hostname's records; nil when the class does
	// not manage DNS.
	DNS map[string]DNSState
	// Created: tunnelgate created this tunnel for the Gateway whose own it
	// is (GatewayConditionTunnel records it).
	Created bool
	// AwaitsIntent: the Gateway's own tunnel does not exist, and is
	// created once the Gateway's status says tunnelgate creates it
	// (TunnelIntent).
	AwaitsIntent bool
	// Departed: the cleanup after a Gateway that no longer has a tunnel
	// of its own is done (its DNS records removed, its tunnel emptied or
	// deleted); the controller then lets the Gateway go.
	Departed bool
	// AccessApps are the states of the Access applications kept with
	// this tunnel (Desired.AccessApps), by AccessApp.Policy.
	AccessApps map[string]AccessAppState
	// LoadBalancers are the states of the load balanced hostnames this
	// tunnel serves (Desired.LoadBalancers), by LoadBalancing.Policy.
	LoadBalancers map[string]LBState
	// Rotation is what is known of the rotation of the tunnel's
	// credential (ClassConditionCredentialRotated).
	Rotation RotationState
}

// RotationState is what the Cloudflare sync reports of a tunnel
// credential's rotation.
type RotationState struct {
	// Asked: a schedule or an on-demand request asks for rotations.
	Asked bool
	// Last is when the credential was last rotated; zero if never.
	Last time.Time
	// Every is the schedule's interval; zero without one.
	Every time.Duration
	// Next is when the schedule rotates it next; zero without one, or
	// before the token Secret it counts from is written.
	Next time.Time
	// Failed is why the last attempt failed; it is retried.
	Failed string
	// Refused says why the credential cannot be rotated at all, and what
	// to do.
	Refused string
}

// Equal says whether two RotationStates say the same.
func (r RotationState) Equal(o RotationState) bool {
	return r.Asked == o.Asked && r.Last.Equal(o.Last) && r.Every == o.Every && r.Next.Equal(o.Next) && r.Failed == o.Failed && r.Refused == o.Refused
}

// Equal says whether two states say the same. A nil DNS (DNS not
// managed) differs from an empty one.
func (s *TunnelState) Equal(o *TunnelState) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.ID == o.ID && s.Problem == o.Problem && s.NoResources == o.NoResources && s.Pending == o.Pending &&
		s.Created == o.Created && s.AwaitsIntent == o.AwaitsIntent && s.Departed == o.Departed &&
		(s.DNS == nil) == (o.DNS == nil) && maps.Equal(s.DNS, o.DNS) &&
		(s.AccessApps == nil) == (o.AccessApps == nil) && maps.Equal(s.AccessApps, o.AccessApps) &&
		(s.LoadBalancers == nil) == (o.LoadBalancers == nil) && maps.Equal(s.LoadBalancers, o.LoadBalancers) &&
		s.Rotation.Equal(o.Rotation)
}

// DNSState is the state of one hostname's records.
type DNSState struct {
	Ready bool
	// LoadBalanced: the hostname is load balanced (LoadBalancing), and
	// its load balancer, not a CNAME to the tunnel, answers for it; Ready
	// then means no record the load balancer would hide is left.
	LoadBalanced bool
	// Unmanaged: a DNSPolicy leaves the hostname's DNS to others
	// (Hostname.UnmanagedDNS), and the sync created no record for it;
	// Ready then means the records it owned there are gone.
	Unmanaged bool
	// Reason and Message explain a hostname that is not Ready: a
	// condition reason (DNSReason*) and what the user can do.
	Reason, Message string
}

// The route condition that reports DNS records, and its reasons.
const (
	RouteConditionDNSRecords = "tunnelgate.dev/DNSRecords"

	DNSReasonReady         = "RecordsReady"
	DNSReasonPending       = "Pending"
	DNSReasonForeignRecord = "ForeignRecord"
	DNSReasonOwnedByOther  = "OwnedByAnotherOwner"
	DNSReasonNoZone        = "NoZone"
	DNSReasonAPIError      = "APIError"
)

// TunnelHostnameSuffix makes a tunnel's public name from its ID.
const TunnelHostnameSuffix = ".cfargotunnel.com"

// tunnelOf returns the state of the tunnel that carries a Gateway now
// (tunnelKey); or nil.
func (t *translator) tunnelOf(gi *gatewayInfo) *TunnelState {
	if k, ok := gi.tunnelKey(); ok {
		return t.in.Tunnels[k]
	}
	return nil
}

// tunnelKey is the Input.Tunnels key of the tunnel that carries a Gateway
// now: its plane's (planeTunnelKey) once its plane serves it, else its
// class's; false for none.
func (gi *gatewayInfo) tunnelKey() (string, bool) {
	switch {
	case gi == nil || gi.class == nil:
		return "", false
	case gi.onPlane():
		return gi.planeTunnelKey()
	}
	return gi.class.obj.Name, true
}

// planeTunnel returns the state of the tunnel that carries a dedicated
// Gateway once its plane serves it, moving or not (planeTunnelKey); or
// nil.
func (t *translator) planeTunnel(gi *gatewayInfo) *TunnelState {
	if k, ok := gi.planeTunnelKey(); ok {
		return t.in.Tunnels[k]
	}
	return nil
}

// planeTunnelKey is the Input.Tunnels key of the tunnel that carries a
// dedicated Gateway once its plane serves it: its own, or its class's
// when the shared proxies relay to its plane; false when its plane
// serves in the cluster.
func (gi *gatewayInfo) planeTunnelKey() (string, bool) {
	switch {
	case gi.params.Spec.Tunnel != nil:
		return PlaneTunnelKey(gi.class.obj.Name, gi.key), true
	case gi.params.Spec.Relayed():
		return gi.class.obj.Name, true
	}
	return "", false
}

// PlaneTunnelKey is the Input.Tunnels key of a Gateway's own tunnel; a
// class's is its name, which has no "/".
func PlaneTunnelKey(class string, gateway types.NamespacedName) string {
	return class + "/" + gateway.Namespace + "/" + gateway.Name
}

// GatewayOfTunnelKey is the Gateway whose own tunnel key (an
// Input.Tunnels key) names, and false for a class's key.
func GatewayOfTunnelKey(key string) (types.NamespacedName, bool) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: parts[1], Name: parts[2]}, true
}

// gatewayAddresses are the tunnel's hostname, when known, then the
// addresses every Gateway gets, each with its routability: the tunnel's
// hostname has no portable guarantee (""), the others say theirs ("" when
// they do not).
func gatewayAddresses(ts *TunnelState, common []gwv1.GatewayStatusAddress) []gwv1.GatewayStatusAddress {
	out := make([]gwv1.GatewayStatusAddress, 0, 1+len(common))
	if ts != nil && ts.ID != "" {
		out = append(out, gwv1.GatewayStatusAddress{Type: new(gwv1.HostnameAddressType), Value: ts.ID + TunnelHostnameSuffix,
			Routability: routability(gwv1.GatewayAddressRoutabilityDefault)})
	}
	for _, a := range common {
		if a.Routability == nil {
			a.Routability = routability(gwv1.GatewayAddressRoutabilityDefault)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// dnsCondition sums up the records of the hostnames a route publishes
// through one parent: True when all are ready or left to others (by the
// DNSPolicy left names, by hostname), False naming the ones that are not
// (or that an older route holds through another tunnel), Unknown while
// the sync has not reported them as they are now wanted. ok is false
// when the class does not manage DNS or the parent publishes nothing.
func dnsCondition(ts *TunnelState, pi *parentInfo, left map[string]string) (status metav1.ConditionStatus, reason, msg string, ok bool) {
	var hosts, lost []string
	for _, a := range pi.attachments {
		if a.lostTo != "" {
			continue
		}
		hosts = append(hosts, a.held()...)
		for _, l := range a.lost {
			lost = append(lost, l.host+": published by the older "+l.winner)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		return metav1.ConditionFalse, DNSReasonClaimedEarlier, joinLimited(slices.Compact(lost)), true
	}
	if ts == nil || ts.DNS == nil || len(hosts) == 0 {
		return "", "", "", false
	}
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	var problems, pending, cnames, balanced, unmanaged []string
	for _, h := range hosts {
		st, known := ts.DNS[h]
		policy, isLeft := left[h]
		switch {
		case !known, st.Reason != DNSReasonAPIError && !st.LoadBalanced && st.Unmanaged != isLeft:
			// Not reported yet as it is now wanted (a DNSPolicy came or
			// went since the sync's report).
			pending = append(pending, h)
		case !st.Ready:
			if reason == "" {
				reason = st.Reason
			}
			problems = append(problems, h+": "+st.Message)
		case st.LoadBalanced:
			balanced = append(balanced, h)
		case st.Unmanaged:
			unmanaged = append(unmanaged, "DNS for "+h+" is left to others by DNSPolicy "+policy)
		default:
			cnames = append(cnames, h)
		}
	}
	switch {
	case len(problems) > 0:
		return metav1.ConditionFalse, reason, joinLimited(problems), true
	case len(pending) > 0:
		return metav1.ConditionUnknown, DNSReasonPending, "waiting for the DNS sync of " + joinLimited(pending), true
	}
	if len(cnames)+len(balanced) == 0 {
		return metav1.ConditionTrue, DNSReasonUnmanaged, joinLimited(unmanaged), true
	}
	var parts []string
	if len(cnames) > 0 {
		parts = append(parts, "CNAME records point "+joinLimited(cnames)+" at the tunnel")
	}
	if len(balanced) > 0 {
		parts = append(parts, "a Cloudflare load balancer (LoadBalancingPolicy) answers for "+joinLimited(balanced)+", with no CNAME record to the tunnel")
	}
	if len(unmanaged) > 0 {
		parts = append(parts, joinLimited(unmanaged))
	}
	return metav1.ConditionTrue, DNSReasonReady, strings.Join(parts, "; and "), true
}

// grpcThroughTunnel explains why a GRPCRoute cannot be served through the
// tunnel of gw's class, or returns "". gRPC needs HTTP trailers, which
// cloudflared carries with the tunnel protocol http2 and drops over QUIC;
// the proxies report their sidecars' protocol (Input.TunnelProtocols).
func (t *translator) grpcThroughTunnel(r *routeInfo, gw *gatewayInfo) string {
	if r.kind != kindGRPCRoute || t.tunnelOf(gw) == nil {
		return ""
	}
	var bad []string
	for _, p := range t.in.TunnelProtocols {
		if p != "http2" {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "the proxies' cloudflared runs the tunnel with protocol " + strings.Join(bad, ", ") +
		", which drops the trailers gRPC needs; run cloudflared with --protocol http2 (the Helm chart's default)"
}
