// This file defines DNSPolicy, which says who keeps the DNS records of the hostnames its targets serve.

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// KindDNSPolicy is the kind of DNSPolicy.
const KindDNSPolicy = "DNSPolicy"

// DNSPolicy says who keeps the DNS records of the public hostnames its
// targets serve (docs/cloudflare.md): tunnelgate (Managed, what happens
// without a policy) or someone else, such as external-dns or a load
// balancer of the user's (Unmanaged). An unmanaged hostname is still
// routed by the tunnel's ingress document; tunnelgate creates no record
// for it, removes the records it created there before (those its
// ownership record names), and never touches any other.
//
// It attaches to its targets the Gateway API way (policy attachment):
// targetRefs name Gateways (sectionName: a listener), HTTPRoutes,
// GRPCRoutes, TCPRoutes or TLSRoutes in the policy's namespace. Between
// policies naming the same target the oldest applies and the others are
// Conflicted there. A hostname that any applied Unmanaged policy reaches
// is unmanaged, whichever other routes publish it.
type DNSPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSPolicySpec     `json:"spec"`
	Status gwv1.PolicyStatus `json:"status,omitempty"`
}

// DNSPolicySpec is what tunnelgate does about the DNS of its targets'
// hostnames.
type DNSPolicySpec struct {
	// TargetRefs are the Gateways (sectionName: a listener) and routes
	// whose public hostnames the policy covers: a route's hostnames as it
	// is attached, a listener's as the routes attached to it publish them.
	TargetRefs []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`
	// Records says who keeps the hostnames' DNS records: Managed
	// (tunnelgate, the default) or Unmanaged (someone else).
	Records DNSRecords `json:"records,omitempty"`
}

// DNSRecords is who keeps a hostname's DNS records.
type DNSRecords string

// Who keeps a hostname's DNS records.
const (
	// DNSRecordsManaged: tunnelgate keeps a CNAME to the tunnel and its
	// ownership record, as it does without a policy.
	DNSRecordsManaged DNSRecords = "Managed"
	// DNSRecordsUnmanaged: someone else does; tunnelgate creates none and
	// removes those it owns.
	DNSRecordsUnmanaged DNSRecords = "Unmanaged"
	// DefaultDNSRecords applies when records is not set.
	DefaultDNSRecords = DNSRecordsManaged
)

// DNSPolicyList is a list of DNSPolicies.
type DNSPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSPolicy `json:"items"`
}
