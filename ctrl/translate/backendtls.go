// This file implements BackendTLSPolicy.

package translate

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// reasonInvalidBackendTLS is the route's ResolvedRefs reason when the
// BackendTLSPolicy of a backend cannot be met. The spec lists no reason for
// it; this one names the object to look at.
const reasonInvalidBackendTLS = "InvalidBackendTLSPolicy"

// maxAncestors caps a policy's ancestor statuses, as the API does.
const maxAncestors = 16

// policyInfo is one BackendTLSPolicy's decision: the TLS settings it yields
// or why it cannot, and the Gateways whose routes use it.
type policyInfo struct {
	obj       *gwv1.BackendTLSPolicy
	settings  *proxycfg.TLSSettings
	accepted  bool
	reason    string // Accepted=False reason, when not accepted
	msg       string
	refReason string // ResolvedRefs=False reason, "" when refs resolve
	refMsg    string
	// lostTo names the policy that won a conflict on some target.
	lostTo    string
	ancestors map[*gatewayInfo]bool
}

// backendTLS finds, among the policies that target a backend (cands), the
// policy for one backend port (a policy naming the port's sectionName
// beats one naming the whole backend; among equals the oldest wins) and
// returns its TLS settings: nil without a policy, a problem with an empty
// reason when the policy is unusable (requests then fail with 500; the
// policy's status says why).
func (t *translator) backendTLS(cands []*gwv1.BackendTLSPolicy, group, kind, name, sectionName string) (*proxycfg.TLSSettings, *refProblem) {
	if len(cands) == 0 {
		return nil, nil
	}
	var specific, general []*gwv1.BackendTLSPolicy
	for _, p := range cands {
		for _, tr := range p.Spec.TargetRefs {
			if string(tr.Group) != group || string(tr.Kind) != kind || string(tr.Name) != name {
				continue
			}
			switch {
			case tr.SectionName == nil || *tr.SectionName == "":
				general = append(general, p)
			case string(*tr.SectionName) == sectionName:
				specific = append(specific, p)
			}
		}
	}
	list := specific
	if len(list) == 0 {
		list = general
	}
	if len(list) == 0 {
		return nil, nil
	}
	sort.Slice(list, func(i, j int) bool { return olderThan(&list[i].ObjectMeta, &list[j].ObjectMeta) })
	win := t.policy(list[0])
	t.lastPolicies = append(t.lastPolicies, win)
	for _, p := range list[1:] {
		if p != list[0] {
			lost := t.policy(p)
			lost.lostTo = list[0].Namespace + "/" + list[0].Name
			t.lastPolicies = append(t.lastPolicies, lost)
		}
	}
	if !win.accepted {
		// The spec: a backend whose BackendTLSPolicy cannot be met is an
		// invalid reference (ResolvedRefs=False) and its share fails.
		return nil, &refProblem{reasonInvalidBackendTLS, fmt.Sprintf("BackendTLSPolicy %s/%s cannot be applied: %s", win.obj.Namespace, win.obj.Name, win.msg)}
	}
	s := *win.settings
	return &s, nil
}

// policy validates a BackendTLSPolicy once per translation.
func (t *translator) policy(p *gwv1.BackendTLSPolicy) *policyInfo {
	if pi := t.policyByObj[p]; pi != nil {
		return pi
	}
	pi := &policyInfo{obj: p, accepted: true, ancestors: map[*gatewayInfo]bool{}}
	t.policyByObj[p] = pi
	v := &p.Spec.Validation
	s := &proxycfg.TLSSettings{SNI: string(v.Hostname)}
	for _, san := range v.SubjectAltNames {
		switch san.Type {
		case gwv1.HostnameSubjectAltNameType:
			s.SANDNSNames = append(s.SANDNSNames, string(san.Hostname))
		case gwv1.URISubjectAltNameType:
			s.SANURIs = append(s.SANURIs, string(san.URI))
		}
	}
	if msg := backendTLSOptions(p.Spec.Options, s); msg != "" {
		pi.accepted, pi.reason, pi.msg = false, string(gwv1.PolicyReasonInvalid), msg
		pi.settings = s
		return pi
	}
	var pems []string
	var bad []string
	badKind := false
	for _, ref := range v.CACertificateRefs {
		var ca string
		switch {
		case ref.Group == "" && ref.Kind == "ConfigMap":
			cm := t.look.configMap(p.Namespace, string(ref.Name))
			if cm == nil {
				bad = append(bad, fmt.Sprintf("ConfigMap %s not found", ref.Name))
				continue
			}
			ca = cm.Data["ca.crt"]
			if !validPEMCerts(ca) {
				bad = append(bad, fmt.Sprintf("ConfigMap %s: ca.crt holds no PEM certificate", ref.Name))
				continue
			}
		case ref.Group == groupCertificates && ref.Kind == kindClusterTrustBundle:
			var problem string
			if ca, problem = t.clusterTrustBundle(string(ref.Name)); problem != "" {
				bad = append(bad, problem)
				continue
			}
		default:
			bad = append(bad, fmt.Sprintf("%s %s: only ConfigMaps and %s/%s are supported", groupKind(ref.Group, ref.Kind), ref.Name, groupCertificates, kindClusterTrustBundle))
			badKind = true
			continue
		}
		pems = append(pems, ca)
	}
	if len(bad) > 0 {
		pi.refReason, pi.refMsg = string(gwv1.BackendTLSPolicyReasonInvalidCACertificateRef), strings.Join(bad, "; ")
		if badKind {
			pi.refReason = string(gwv1.BackendTLSPolicyReasonInvalidKind)
		}
	}
	switch {
	case v.WellKnownCACertificates != nil && *v.WellKnownCACertificates != gwv1.WellKnownCACertificatesSystem:
		pi.accepted, pi.reason, pi.msg = false, string(gwv1.PolicyReasonInvalid), fmt.Sprintf("wellKnownCACertificates %q is not supported (System is)", *v.WellKnownCACertificates)
	case v.WellKnownCACertificates != nil:
		// System roots: CAPEM stays empty.
	case len(pems) == 0:
		pi.accepted, pi.reason, pi.msg = false, string(gwv1.BackendTLSPolicyReasonNoValidCACertificate), "no valid CA certificate: "+pi.refMsg
	default:
		s.CAPEM = strings.Join(pems, "\n")
	}
	pi.settings = s
	return pi
}

// OptionMinTLSVersion is the BackendTLSPolicy option (spec.options, a
// Standard field since Gateway API v1.7) that sets the least TLS version
// the proxy accepts from the backend: "1.2" (the default) or "1.3".
const OptionMinTLSVersion = "tunnelgate.dev/min-tls-version"

// backendTLSOptions applies a policy's options to s, or says why it
// cannot. An option tunnelgate does not know makes the policy invalid
// rather than ignored: an option asks for something of the TLS
// connection, and the backend must not get a weaker one silently.
func backendTLSOptions(opts map[gwv1.AnnotationKey]gwv1.AnnotationValue, s *proxycfg.TLSSettings) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := string(opts[gwv1.AnnotationKey(k)])
		switch k {
		case OptionMinTLSVersion:
			if v != proxycfg.TLS12 && v != proxycfg.TLS13 {
				return fmt.Sprintf("options: %s is %q; give %q or %q", k, v, proxycfg.TLS12, proxycfg.TLS13)
			}
			if v == proxycfg.TLS13 {
				s.MinVersion = v
			}
		default:
			return fmt.Sprintf("options: %q is not supported; tunnelgate knows %s", k, OptionMinTLSVersion)
		}
	}
	return ""
}

// groupCertificates and kindClusterTrustBundle name the cluster-scoped
// ClusterTrustBundle (certificates.k8s.io/v1), the extended kind of CA
// reference (feature ClusterTrustBundle) of BackendTLSPolicy and of a
// Gateway's frontend validation. A reference names it without a namespace.
const (
	groupCertificates      = certificatesv1.GroupName
	kindClusterTrustBundle = "ClusterTrustBundle"
)

// clusterTrustBundle returns the PEM certificates of a ClusterTrustBundle,
// or why it cannot.
func (t *translator) clusterTrustBundle(name string) (pems, problem string) {
	b := t.look.trustBundle(name)
	switch {
	case b == nil:
		return "", fmt.Sprintf("ClusterTrustBundle %s not found", name)
	case !validPEMCerts(b.Spec.TrustBundle):
		return "", fmt.Sprintf("ClusterTrustBundle %s: trustBundle holds no PEM certificate", name)
	}
	return b.Spec.TrustBundle, ""
}

func validPEMCerts(s string) bool {
	rest := []byte(s)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return n > 0
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return false
		}
		n++
	}
}

// policyStatuses writes each used policy's ancestor statuses: one per
// Gateway whose routes reach a target of the policy, at most 16.
func (t *translator) policyStatuses() {
	for p, pi := range t.policyByObj {
		if len(pi.ancestors) == 0 {
			continue
		}
		gws := make([]*gatewayInfo, 0, len(pi.ancestors))
		for g := range pi.ancestors {
			gws = append(gws, g)
		}
		sort.Slice(gws, func(i, j int) bool {
			return lessNN(gws[i].key.Namespace, gws[i].key.Name, gws[j].key.Namespace, gws[j].key.Name)
		})
		if len(gws) > maxAncestors {
			gws = gws[:maxAncestors]
		}
		var out []gwv1.PolicyAncestorStatus
		for _, g := range gws {
			ref := gwv1.ParentReference{Group: groupPtr(groupGateway), Kind: kindPtr("Gateway"),
				Namespace: nsPtr(g.key.Namespace), Name: gwv1.ObjectName(g.key.Name)}
			c := t.newConds(prevAncestorConds(p.Status.Ancestors, &ref, t.in.ControllerName), p.Generation)
			switch {
			case pi.lostTo != "":
				c.set(string(gwv1.PolicyConditionAccepted), false, string(gwv1.PolicyReasonConflicted), "BackendTLSPolicy "+pi.lostTo+" is older and targets the same backend")
			case !pi.accepted:
				c.set(string(gwv1.PolicyConditionAccepted), false, pi.reason, pi.msg)
			default:
				c.set(string(gwv1.PolicyConditionAccepted), true, string(gwv1.PolicyReasonAccepted), "policy applied")
			}
			if pi.refReason != "" {
				c.set(string(gwv1.BackendTLSPolicyConditionResolvedRefs), false, pi.refReason, pi.refMsg)
			} else {
				c.set(string(gwv1.BackendTLSPolicyConditionResolvedRefs), true, string(gwv1.BackendTLSPolicyReasonResolvedRefs), "all references resolved")
			}
			out = append(out, gwv1.PolicyAncestorStatus{AncestorRef: ref, ControllerName: gwv1.GatewayController(t.in.ControllerName), Conditions: c.list})
		}
		t.out.BackendTLSPolicies[nn(p.Namespace, p.Name)] = out
	}
}

// prevAncestorConds are the conditions a policy's status holds for an
// ancestor of ours, for any policy kind.
func prevAncestorConds(list []gwv1.PolicyAncestorStatus, ref *gwv1.ParentReference, controller string) []metav1.Condition {
	for i := range list {
		if a := &list[i]; string(a.ControllerName) == controller && SameParentRef(&a.AncestorRef, ref) {
			return a.Conditions
		}
	}
	return nil
}

func kindPtr(k string) *gwv1.Kind     { kk := gwv1.Kind(k); return &kk }
func nsPtr(ns string) *gwv1.Namespace { n := gwv1.Namespace(ns); return &n }
func ptrEq[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
