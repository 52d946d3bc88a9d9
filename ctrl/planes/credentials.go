// This file keeps what a plane's credentials Secret holds across applies.

package planes

import (
	"crypto/rand"
	"encoding/base64"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// credentials are what the provisioner makes for a plane's credentials
// Secret: the config API token and, for a plane the shared proxies relay
// to, the relay's credentials. Both are made once and kept. The owned
// informer may not show the Secret the provisioner just wrote when the
// plane is applied again; making them anew then would change them under
// the plane's Pods. So what this replica wrote last, while leading, comes
// first, then the Secret in the cache, and only then new ones.
type credentials struct {
	token string
	relay *provision.RelayCredentials
}

// credentialsOf are the plane's credentials, as they are or made anew.
func (p *Provisioner) credentialsOf(key types.NamespacedName, plane provision.Plane) (credentials, error) {
	p.mu.Lock()
	last := p.made[key]
	p.mu.Unlock()
	secret := p.owned.secret(plane.Gateway.Namespace, plane.Secrets.Credentials)
	c := credentials{token: last.token}
	if c.token == "" {
		var err error
		if c.token, err = tokenOf(secret); err != nil {
			return credentials{}, err
		}
	}
	if !plane.Params.Relayed() {
		return c, nil
	}
	existing, ok := provision.RelayCredentialsOf(secret)
	if last.relay != nil {
		existing, ok = *last.relay, true
	}
	relay, err := KeepOrRenewRelayCredentials(existing, ok, time.Now())
	if err != nil {
		return credentials{}, err
	}
	c.relay = &relay
	return c, nil
}

// remember keeps the credentials just written for the plane of key.
func (p *Provisioner) remember(key types.NamespacedName, c credentials) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leading {
		p.made[key] = c
	}
}

// forget drops them once the plane is gone.
func (p *Provisioner) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.made, key)
}

// tokenOf is the token in the credentials Secret, or a new random one
// when it has none.
func tokenOf(s *corev1.Secret) (string, error) {
	if s != nil {
		if t := s.Data[provision.KeyConfigToken]; len(t) >= 32 {
			return string(t), nil
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
