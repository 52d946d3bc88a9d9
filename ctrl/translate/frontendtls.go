// This file checks listeners' client certificate validation.

package translate

import (
	"fmt"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Frontend TLS. A Gateway's spec.tls.frontend asks the clients of its
// HTTPS listeners for a certificate that chains to CAs in ConfigMaps
// (key ca.crt) or ClusterTrustBundles (named without a namespace): the
// entry of perPort for the listener's port, else the default. Proxies check it at the TLS handshake on the Gateway's address;
// behind the tunnel the handshake was Cloudflare's, so a listener that
// requires a certificate refuses those requests (proxycfg.ClientValidation).
//
// A reference that does not resolve makes the listener's ResolvedRefs
// False; when none resolves the listener is not Accepted either
// (NoValidCACertificate), since serving it without the check would let in
// the clients it is meant to keep out.

// frontendCheck is the outcome of one listener's client validation.
type frontendCheck struct {
	cv        *proxycfg.ClientValidation // nil: no validation asked for, or none valid
	insecure  bool                       // mode AllowInsecureFallback
	refReason string                     // "" when every reference resolved
	refMsg    string
	noneValid bool
}

// frontendValidation resolves the validation that applies to an HTTPS
// listener of gi on port.
func (t *translator) frontendValidation(gi *gatewayInfo, port int32) frontendCheck {
	g := gi.obj
	if g.Spec.TLS == nil || g.Spec.TLS.Frontend == nil {
		return frontendCheck{}
	}
	f := g.Spec.TLS.Frontend
	v := f.Default.Validation
	for i := range f.PerPort {
		if int32(f.PerPort[i].Port) == port {
			v = f.PerPort[i].TLS.Validation
			break
		}
	}
	if v == nil {
		return frontendCheck{}
	}
	var fc frontendCheck
	fc.insecure = v.Mode == gwv1.AllowInsecureFallback
	var pems, bad []string
	for _, ref := range v.CACertificateRefs {
		if ref.Group == groupCertificates && ref.Kind == kindClusterTrustBundle {
			ca, problem := t.clusterTrustBundle(string(ref.Name))
			if problem == "" && ref.Namespace != nil && *ref.Namespace != "" {
				problem = fmt.Sprintf("caCertificateRef ClusterTrustBundle %s names namespace %s: ClusterTrustBundles are cluster-scoped", ref.Name, *ref.Namespace)
			}
			if problem == "" {
				pems = append(pems, ca)
				continue
			}
			if fc.refReason == "" {
				fc.refReason = string(gwv1.ListenerReasonInvalidCACertificateRef)
			}
			bad = append(bad, problem)
			continue
		}
		ns := g.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		what := fmt.Sprintf("%s/%s", ns, ref.Name)
		problem, reason := "", ""
		switch cm := t.look.configMap(ns, string(ref.Name)); {
		case ref.Group != "" || ref.Kind != "ConfigMap":
			problem, reason = fmt.Sprintf("caCertificateRef %s %s: only core ConfigMaps and %s/%s are supported", groupKind(ref.Group, ref.Kind), ref.Name, groupCertificates, kindClusterTrustBundle),
				string(gwv1.ListenerReasonInvalidCACertificateKind)
		case !t.look.granted(groupGateway, "Gateway", g.Namespace, "", "ConfigMap", ns, string(ref.Name)):
			problem, reason = fmt.Sprintf("ConfigMap %s is in another namespace and no ReferenceGrant there allows it", what),
				string(gwv1.ListenerReasonRefNotPermitted)
		case cm == nil:
			problem, reason = fmt.Sprintf("ConfigMap %s not found", what), string(gwv1.ListenerReasonInvalidCACertificateRef)
		case !validPEMCerts(cm.Data["ca.crt"]):
			problem, reason = fmt.Sprintf("ConfigMap %s: ca.crt holds no PEM certificate", what), string(gwv1.ListenerReasonInvalidCACertificateRef)
		default:
			pems = append(pems, cm.Data["ca.crt"])
			continue
		}
		if fc.refReason == "" {
			fc.refReason = reason
		}
		bad = append(bad, problem)
	}
	fc.refMsg = strings.Join(bad, "; ")
	if len(pems) == 0 {
		fc.noneValid = true
		return fc
	}
	fc.cv = &proxycfg.ClientValidation{CACertificates: strings.Join(pems, "\n"), AllowInsecureFallback: fc.insecure}
	return fc
}

func groupKind(group gwv1.Group, kind gwv1.Kind) string {
	if group == "" {
		return "core/" + string(kind)
	}
	return string(group) + "/" + string(kind)
}
