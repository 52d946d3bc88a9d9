package kubeenv

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// identity is a client certificate and its key, PEM encoded.
type identity struct{ cert, key []byte }

// restConfig returns a client config for host as id, trusting the Env's CA.
// The rate limit is raised well above client-go's default of 5 requests a
// second, which would make tests slow for nothing.
func (e *Env) restConfig(host string, id identity) *rest.Config {
	return &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   e.pki.caPEM,
			CertData: id.cert,
			KeyData:  id.key,
		},
		QPS:   200,
		Burst: 400,
	}
}

// writeKubeconfig writes a self-contained kubeconfig (certificates inline)
// for the apiserver as user, and returns its path.
func (e *Env) writeKubeconfig(name, user string, cert, key []byte) (string, error) {
	// []byte fields marshal as base64, which is what the *-data keys hold.
	doc := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"current-context": "kubeenv",
		"clusters": []any{map[string]any{
			"name":    "kubeenv",
			"cluster": map[string]any{"server": e.host, "certificate-authority-data": e.pki.caPEM},
		}},
		"users": []any{map[string]any{
			"name": user,
			"user": map[string]any{"client-certificate-data": cert, "client-key-data": key},
		}},
		"contexts": []any{map[string]any{
			"name":    "kubeenv",
			"context": map[string]any{"cluster": "kubeenv", "user": user},
		}},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.Dir, name)
	return path, os.WriteFile(path, b, 0o600)
}
