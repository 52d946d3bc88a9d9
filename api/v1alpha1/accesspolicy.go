// This file defines AccessPolicy, which puts Cloudflare Access in front of
// routes and listeners.

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// KindAccessPolicy is the kind of AccessPolicy.
const KindAccessPolicy = "AccessPolicy"

// AccessPolicy puts Gateways, routes or single route rules behind
// Cloudflare Access: the proxies let a request through only with a token
// Access issued for one of the policy's applications, verified on every
// request (docs/access.md).
//
// It attaches to its targets the Gateway API way (policy attachment):
// targetRefs name Gateways, HTTPRoutes, GRPCRoutes, TCPRoutes or
// TLSRoutes in the policy's namespace, with sectionName for one listener
// or one named rule. On a TCPRoute or TLSRoute the tunnel checks each
// stream's token (its team and audience), not the proxy. On a
// rule the most specific policy applies whole: one naming the rule, else
// one naming its route, else one naming the listener the request came
// through, else one naming its Gateway. Between policies naming the same
// target the oldest applies and the others are Conflicted.
type AccessPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AccessPolicySpec  `json:"spec"`
	Status gwv1.PolicyStatus `json:"status,omitempty"`
}

// AccessPolicySpec is what a protected request must carry.
type AccessPolicySpec struct {
	// TargetRefs are the Gateways (sectionName: a listener), HTTPRoutes,
	// GRPCRoutes, TCPRoutes and TLSRoutes (sectionName: a rule's name)
	// the policy protects.
	TargetRefs []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`
	// TeamDomain is the Access team, "<team>.cloudflareaccess.com": its
	// published keys sign the tokens, and "https://" and the domain is
	// their issuer.
	TeamDomain string `json:"teamDomain"`
	// Audiences are the audience (AUD) tags of the Access applications
	// whose tokens pass: a token must be issued for one of them. Needed
	// unless Application is set, whose tag is added to them.
	Audiences []string `json:"audiences,omitempty"`
	// Application, when set, has the controller create and keep the
	// Access application itself, in the Cloudflare account of the
	// tunnel serving the protected hostnames: over those hostnames, and
	// letting in who Require names (emails, email domains, service
	// tokens; not groups).
	Application *AccessApplication `json:"application,omitempty"`
	// Require, when set, narrows who passes among the holders of a valid
	// token: a token must match one entry of one of its lists.
	Require *AccessRequirements `json:"require,omitempty"`
	// IdentityHeaders name the request headers the backend gets the
	// token's identity in. Unset, the defaults (DefaultAccessHeaders)
	// are sent; set, exactly the names given are (an empty one sends
	// none). Copies a client sent are always removed.
	IdentityHeaders *AccessIdentityHeaders `json:"identityHeaders,omitempty"`
}

// AccessApplication is the Access application the controller keeps for
// a policy.
type AccessApplication struct {
	// Name is the application's name in Cloudflare; default
	// "<namespace>/<policy name>". Renaming it replaces the application
	// (and its audience tag).
	Name string `json:"name,omitempty"`
	// SessionDuration is how long a login lasts, as a Go duration
	// ("24h", "30m"); empty: Cloudflare's default.
	SessionDuration string `json:"sessionDuration,omitempty"`
}

// AppName is the name of the policy's application: its own, or
// "<namespace>/<name>".
func (p *AccessPolicy) AppName() string {
	if a := p.Spec.Application; a != nil && a.Name != "" {
		return a.Name
	}
	return p.Namespace + "/" + p.Name
}

// AccessRequirements are who may pass: emails and email domains compare
// without case; groups are the identity provider's group names or IDs as
// the token carries them; service tokens are Access service tokens'
// client IDs.
type AccessRequirements struct {
	Emails        []string `json:"emails,omitempty"`
	EmailDomains  []string `json:"emailDomains,omitempty"`
	Groups        []string `json:"groups,omitempty"`
	ServiceTokens []string `json:"serviceTokens,omitempty"`
}

// AccessIdentityHeaders name the identity headers: the token's email,
// subject (the user's ID), groups (comma-separated) and service token
// client ID.
type AccessIdentityHeaders struct {
	Email        string `json:"email,omitempty"`
	Subject      string `json:"subject,omitempty"`
	Groups       string `json:"groups,omitempty"`
	ServiceToken string `json:"serviceToken,omitempty"`
}

// DefaultAccessHeaders are the identity headers of a policy without
// identityHeaders. The email goes where Cloudflare's edge puts it
// (Cf-Access-Authenticated-User-Email), so a backend written for Access
// reads it unchanged, now checked.
var DefaultAccessHeaders = AccessIdentityHeaders{
	Email:        "Cf-Access-Authenticated-User-Email",
	Subject:      "Tunnelgate-Access-Subject",
	Groups:       "Tunnelgate-Access-Groups",
	ServiceToken: "Tunnelgate-Access-Service-Token",
}

// Headers are the identity headers the policy sends: its own, or the
// defaults when it names none.
func (s *AccessPolicySpec) Headers() AccessIdentityHeaders {
	if s.IdentityHeaders == nil {
		return DefaultAccessHeaders
	}
	return *s.IdentityHeaders
}

// AccessPolicyList is a list of AccessPolicies.
type AccessPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AccessPolicy `json:"items"`
}
