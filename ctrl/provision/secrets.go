package provision

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// The keys of a plane's credentials Secret.
const (
	// KeyConfigToken is the bearer token the plane's proxies present to
	// the config API: it reads that Gateway's config and nothing else.
	KeyConfigToken = "config-token"
	// KeyCA is the CA that signed the config API's certificate.
	KeyCA = "ca.crt"
)

// defaultTokenKey is the key of a tunnel token Secret when none is named.
const defaultTokenKey = "token"

// SecretsOf names the Secrets a Gateway's plane mounts: its credentials
// Secret, and its tunnel token, in the Secret the GatewayConfig names or
// else in one the controller writes.
func SecretsOf(g *gwv1.Gateway, params *v1alpha1.GatewayConfigSpec) Secrets {
	name := Name(g.Name, string(g.Spec.GatewayClassName))
	s := Secrets{Credentials: name + "-credentials", TunnelToken: name + "-tunnel", TunnelTokenKey: defaultTokenKey}
	if t := params.Tunnel; t != nil && t.TokenSecretRef != nil {
		s.TunnelToken = t.TokenSecretRef.Name
		if t.TokenSecretRef.Key != "" {
			s.TunnelTokenKey = t.TokenSecretRef.Key
		}
	}
	return s
}

// CredentialsSecret is a plane's credentials Secret, owned by its Gateway
// like the rest of the plane. The token is the controller's to make (at
// random, once) and to keep: it is not derived from anything.
func CredentialsSecret(p Plane, token string, ca []byte) *corev1.Secret {
	m := meta(p)
	m.Name = p.Secrets.Credentials
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: m,
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KeyConfigToken: []byte(token), KeyCA: ca},
	}
}
