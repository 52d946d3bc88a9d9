// This file names a plane's Secrets and renders its credentials Secret.

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

// The relay's keys in the credentials Secret of a plane that takes its
// requests from the shared proxies (GatewayConfig classTunnel). The CA
// is the plane's alone and signed the two certificates only: its key was
// dropped once they were made. The plane's proxies serve the relay with
// the server certificate and admit only clients of that CA; the shared
// proxies relay with the client certificate, from their config.
const (
	KeyRelayCA         = "relay-ca.crt"
	KeyRelayCert       = "relay.crt"
	KeyRelayKey        = "relay.key"
	KeyRelayClientCert = "relay-client.crt"
	KeyRelayClientKey  = "relay-client.key"
)

// RelayServerName is the name in every relay server certificate, which
// the shared proxies check (each plane's CA is its own, so one name
// does for all).
const RelayServerName = "relay.tunnelgate.internal"

// RelayPort is the port of a plane's relay listener, on its Pods and its
// Service.
const RelayPort = v1alpha1.PlaneRelayPort

// RelayCredentials are a plane's relay certificates and keys, in PEM.
type RelayCredentials struct {
	CA, Cert, Key, ClientCert, ClientKey []byte
}

// RelayCredentialsOf reads them from a credentials Secret; ok is false
// while one is missing.
func RelayCredentialsOf(s *corev1.Secret) (c RelayCredentials, ok bool) {
	if s == nil {
		return c, false
	}
	c = RelayCredentials{CA: s.Data[KeyRelayCA], Cert: s.Data[KeyRelayCert], Key: s.Data[KeyRelayKey],
		ClientCert: s.Data[KeyRelayClientCert], ClientKey: s.Data[KeyRelayClientKey]}
	return c, len(c.CA) > 0 && len(c.Cert) > 0 && len(c.Key) > 0 && len(c.ClientCert) > 0 && len(c.ClientKey) > 0
}

// defaultTokenKey is the key of a tunnel token Secret when none is named.
const defaultTokenKey = "token"

// SecretsOf names the Secrets a Gateway's plane mounts: its credentials
// Secret, and its tunnel token, in the Secret the GatewayConfig names or
// else in one the controller writes.
func SecretsOf(g *gwv1.Gateway, params *v1alpha1.GatewayConfigSpec) Secrets {
	name := Name(g.Name, string(g.Spec.GatewayClassName))
	s := Secrets{Credentials: CredentialsName(g.Name, string(g.Spec.GatewayClassName)), TunnelToken: name + "-tunnel", TunnelTokenKey: defaultTokenKey}
	if t := params.Tunnel; t != nil && t.TokenSecretRef != nil {
		s.TunnelToken = t.TokenSecretRef.Name
		if t.TokenSecretRef.Key != "" {
			s.TunnelTokenKey = t.TokenSecretRef.Key
		}
	}
	return s
}

// CredentialsName names the credentials Secret of a Gateway's plane.
func CredentialsName(gateway, class string) string { return Name(gateway, class) + "-credentials" }

// CredentialsSecret is a plane's credentials Secret, owned by its Gateway
// like the rest of the plane. The token is the controller's to make (at
// random, once) and to keep: it is not derived from anything. So are the
// relay's credentials, for a plane that has them (Plane.Relay).
func CredentialsSecret(p Plane, token string, ca []byte) *corev1.Secret {
	m := meta(p)
	m.Name = p.Secrets.Credentials
	data := map[string][]byte{KeyConfigToken: []byte(token), KeyCA: ca}
	if relay := p.Relay; relay != nil {
		data[KeyRelayCA], data[KeyRelayCert], data[KeyRelayKey] = relay.CA, relay.Cert, relay.Key
		data[KeyRelayClientCert], data[KeyRelayClientKey] = relay.ClientCert, relay.ClientKey
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: m,
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}
