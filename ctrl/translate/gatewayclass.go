// This file translates GatewayClasses and checks their parameters.

package translate

import (
	"fmt"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// SupportedBundle is the Gateway API release whose CRDs tunnelgate is built
// against; SupportedVersion is True for any patch of it.
const SupportedBundle = "v1.7"

// olderBundle is the release before SupportedBundle, whose CRDs tunnelgate
// still serves: what v1.7 reshaped is read in v1.6's shape (gwcompat), and
// what v1.6 CRDs cannot hold (address routability) is not written.
// SupportedVersion stays True, saying what an upgrade brings.
const olderBundle = "v1.6"

// crdUpgrade says how to install the CRDs of SupportedBundle.
const crdUpgrade = "install Gateway API " + SupportedBundle + ".0's CRDs: kubectl apply --server-side -f " +
	"https://github.com/kubernetes-sigs/gateway-api/releases/download/" + SupportedBundle + ".0/standard-install.yaml " +
	"(experimental-install.yaml for the experimental channel; docs/install.md#upgrading-the-gateway-api-crds)"

type classInfo struct {
	obj      *gwv1.GatewayClass
	accepted bool
	config   *v1alpha1.GatewayClassConfig
}

// classes decides every GatewayClass of ours: Accepted (parameters) and
// SupportedVersion. Classes of other controllers are not ours to judge.
func (t *translator) classes() {
	for _, gc := range t.in.GatewayClasses {
		if string(gc.Spec.ControllerName) != t.in.ControllerName {
			continue
		}
		ci := &classInfo{obj: gc, accepted: true}
		t.classByName[gc.Name] = ci
		c := t.newConds(gc.Status.Conditions, gc.Generation)

		cfg, problem := t.classParameters(gc)
		ci.config = cfg
		if ts := t.in.Tunnels[gc.Name]; problem == "" && ts != nil && ts.Problem != "" {
			problem = ts.Problem
		}
		current := t.in.BundleVersion == "" || t.in.BundleVersion == SupportedBundle ||
			strings.HasPrefix(t.in.BundleVersion, SupportedBundle+".")
		older := t.in.BundleVersion == olderBundle || strings.HasPrefix(t.in.BundleVersion, olderBundle+".")
		versionOK := current || older
		switch {
		case problem != "":
			ci.accepted = false
			c.set(string(gwv1.GatewayClassConditionStatusAccepted), false, string(gwv1.GatewayClassReasonInvalidParameters), problem)
		case !versionOK:
			ci.accepted = false
			c.set(string(gwv1.GatewayClassConditionStatusAccepted), false, string(gwv1.GatewayClassReasonUnsupportedVersion),
				fmt.Sprintf("Gateway API CRDs %s are installed; tunnelgate supports %s.x (and still %s.x): %s", t.in.BundleVersion, SupportedBundle, olderBundle, crdUpgrade))
		default:
			c.set(string(gwv1.GatewayClassConditionStatusAccepted), true, string(gwv1.GatewayClassReasonAccepted), "tunnelgate manages this class")
		}
		switch {
		case current:
			c.set(string(gwv1.GatewayClassConditionStatusSupportedVersion), true, string(gwv1.GatewayClassReasonSupportedVersion),
				"Gateway API "+SupportedBundle+".x is supported")
		case older:
			c.set(string(gwv1.GatewayClassConditionStatusSupportedVersion), true, string(gwv1.GatewayClassReasonSupportedVersion),
				fmt.Sprintf("Gateway API CRDs %s are installed and served as %s.x; %s adds address routability and session persistence's new shape: %s",
					t.in.BundleVersion, olderBundle, SupportedBundle, crdUpgrade))
		default:
			c.set(string(gwv1.GatewayClassConditionStatusSupportedVersion), false, string(gwv1.GatewayClassReasonUnsupportedVersion),
				fmt.Sprintf("installed CRDs are %s; %s", t.in.BundleVersion, crdUpgrade))
		}
		rotationCondition(&c, t.in.Tunnels[gc.Name])
		t.out.GatewayClasses[gc.Name] = &GatewayClassResult{Status: gwv1.GatewayClassStatus{Conditions: c.list}}
	}
}

// classParameters resolves a class's parametersRef. An empty problem means
// the class may be accepted (no parametersRef is fine: standalone needs none).
func (t *translator) classParameters(gc *gwv1.GatewayClass) (*v1alpha1.GatewayClassConfig, string) {
	ref := gc.Spec.ParametersRef
	if ref == nil {
		return nil, ""
	}
	if string(ref.Group) != v1alpha1.Group || string(ref.Kind) != v1alpha1.KindGatewayClassConfig {
		return nil, fmt.Sprintf("parametersRef must be group %s kind %s, not %s/%s",
			v1alpha1.Group, v1alpha1.KindGatewayClassConfig, ref.Group, ref.Kind)
	}
	if ref.Namespace != nil && *ref.Namespace != "" {
		return nil, "parametersRef must not set a namespace: GatewayClassConfig is cluster-scoped"
	}
	cfg := t.look.classConfig(ref.Name)
	if cfg == nil {
		return nil, fmt.Sprintf("GatewayClassConfig %q not found", ref.Name)
	}
	if p := validateClassConfig(&cfg.Spec); p != "" {
		return nil, fmt.Sprintf("GatewayClassConfig %q: %s", ref.Name, p)
	}
	return cfg, ""
}

// validateClassConfig checks what a GatewayClassConfig can get wrong on its
// own, without asking Cloudflare.
func validateClassConfig(s *v1alpha1.GatewayClassConfigSpec) string {
	if s.Tunnel != nil && s.Tunnel.ID != "" && s.Tunnel.Name != "" {
		return "tunnel: set id (an existing tunnel) or name (a tunnel to create), not both"
	}
	if s.CredentialsRef != nil && (s.CredentialsRef.Name == "" || s.CredentialsRef.Namespace == "") {
		return "credentialsRef needs a namespace and a name"
	}
	if s.Tunnel != nil && s.Tunnel.TokenSecretRef != nil && (s.Tunnel.TokenSecretRef.Name == "" || s.Tunnel.TokenSecretRef.Namespace == "") {
		return "tunnel.tokenSecretRef needs a namespace and a name"
	}
	if s.Tunnel != nil && s.Tunnel.CredentialRotation != nil {
		if s.Tunnel.TokenSecretRef == nil {
			return "tunnel.credentialRotation needs tunnel.tokenSecretRef, the Secret the controller writes the new token to"
		}
		if p := rotationIntervalProblem(s.Tunnel.CredentialRotation); p != "" {
			return p
		}
	}
	if r := s.DefaultGatewayConfigRef; r != nil && (r.Name == "" || r.Namespace == "") {
		return "defaultGatewayConfigRef needs a namespace and a name"
	}
	if s.DNS != nil && s.DNS.OwnerID != "" && !validOwnerID(s.DNS.OwnerID) {
		return fmt.Sprintf("dns.ownerID %q: use letters, digits, '-', '.' and '_' (at most 63)", s.DNS.OwnerID)
	}
	if o := s.Origin; o != nil {
		for _, p := range []int32{o.Port, o.TLSPort} {
			if p < 0 || p > 65535 {
				return fmt.Sprintf("origin port %d is out of range", p)
			}
		}
		if o.Socket != "" && (!strings.HasPrefix(o.Socket, "/") || len(o.Socket) > 107 || strings.ContainsAny(o.Socket, " \t\r\n")) {
			return fmt.Sprintf("origin socket %q: want an absolute path of at most 107 bytes, without spaces", o.Socket)
		}
	}
	return ""
}

// validOwnerID keeps an owner ID safe inside the ownership TXT record,
// whose fields are separated by commas.
func validOwnerID(id string) bool {
	if len(id) > 63 {
		return false
	}
	for i, r := range id {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || i == len(id)-1 || r != '-' && r != '.' && r != '_') {
			return false
		}
	}
	return id != ""
}
