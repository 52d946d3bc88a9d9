package translate_test

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// TestCacheSparesRoutesAnEpochChangeMisses changes the objects every
// route may depend on (a Gateway, a grant, a policy, a Secret) one at a
// time, and requires a Cache's translation to equal a cold one after
// each, reusing the translations of the routes the change does not
// reach and translating again those it does: a route that asked a
// grant when grants change, a route whose backend a new policy targets,
// every route of a Gateway whose backend client certificate changed.
func TestCacheSparesRoutesAnEpochChangeMisses(t *testing.T) {
	in := loadGolden(t, "backends.yaml")
	cloneLists(&in.Snapshot)
	writeBackAll(&in.Snapshot, translate.Translate(in))
	cache := translate.NewCache()
	cache.Translate(in)
	_, routes := cache.Stats()
	if routes < 4 {
		t.Fatalf("backends.yaml has %d attached routes; the test needs some", routes)
	}
	s := &in.Snapshot
	step := func(name string, check func(reused, translated int) bool) {
		t.Helper()
		cold, warm := translate.Translate(in), cache.Translate(in)
		if got, want := render(t, warm), render(t, cold); !bytes.Equal(got, want) {
			t.Fatalf("%s: with a Cache the output differs:\n%s", name, lineDiff(string(want), string(got)))
		}
		if reused, translated := cache.Stats(); !check(reused, translated) {
			t.Errorf("%s: %d routes reused, %d translated", name, reused, translated)
		}
	}
	some := func(reused, translated int) bool { return reused > 0 && translated > 0 }

	// A listener for a hostname no route names: the routes with
	// hostnames attach as they did.
	gw := newRV(s.Gateways[0].DeepCopy())
	gw.Generation++
	gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: "unused", Protocol: gwv1.HTTPProtocolType, Port: 80, Hostname: ptr(gwv1.Hostname("unused.example.net"))})
	s.Gateways[0] = gw
	step("Gateway gains a listener no route takes", func(reused, _ int) bool { return reused > 0 })

	// The grant that lets a route use granted-ns/remote: that route (and
	// any other that asked a grant) is translated again.
	var grant = s.ReferenceGrants[0]
	for _, g := range s.ReferenceGrants {
		if g.Name == "routes-from-default" {
			grant = g
		}
	}
	s.ReferenceGrants = deleteObject(s.ReferenceGrants, grant)
	step("ReferenceGrant deleted", some)
	s.ReferenceGrants = append(s.ReferenceGrants, newRV(grant.DeepCopy()))
	step("ReferenceGrant added back", some)

	// A BackendTLSPolicy for a Service routes use without one: its
	// clusters turn to TLS.
	policy := &gwv1.BackendTLSPolicy{}
	policy.Name, policy.Namespace, policy.UID, policy.Generation = "new", "granted-ns", "uid-new-policy", 1
	policy.Spec.TargetRefs = []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Kind: "Service", Name: "remote"}}}
	policy.Spec.Validation.Hostname = "remote.example.com"
	policy.Spec.Validation.WellKnownCACertificates = ptr(gwv1.WellKnownCACertificatesSystem)
	s.BackendTLSPolicies = append(s.BackendTLSPolicies, newRV(policy))
	step("BackendTLSPolicy added", some)

	// A backend client certificate for the Gateway: every route of it is
	// translated again (its TLS clusters would present the certificate).
	certs := loadGolden(t, "backendtlspolicy.yaml")
	var secret *corev1.Secret
	for _, sec := range certs.Snapshot.Secrets {
		if sec.Name == "client-cert" && sec.Namespace == "default" {
			secret = newUID(sec.DeepCopy())
		}
	}
	if secret == nil {
		t.Fatal("backendtlspolicy.yaml has no Secret default/client-cert")
	}
	s.Secrets = append(s.Secrets, secret)
	step("Secret added that nothing names", func(reused, _ int) bool { return reused > 0 })
	gw = newRV(gw.DeepCopy())
	gw.Generation++
	gw.Spec.TLS = &gwv1.GatewayTLSConfig{Backend: &gwv1.GatewayBackendTLS{ClientCertificateRef: &gwv1.SecretObjectReference{Name: "client-cert"}}}
	s.Gateways[0] = gw
	step("Gateway gains a backend client certificate", func(reused, _ int) bool { return reused == 0 })
	secret = newRV(secret.DeepCopy())
	secret.Data = map[string][]byte{corev1.TLSCertKey: secret.Data[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: []byte("not a key")}
	s.Secrets[len(s.Secrets)-1] = secret
	step("the certificate's Secret broken", func(reused, _ int) bool { return reused == 0 })
}

// deleteObject returns list without o.
func deleteObject[T comparable](list []T, o T) []T {
	out := make([]T, 0, len(list))
	for _, x := range list {
		if x != o {
			out = append(out, x)
		}
	}
	return out
}

// TestCacheSparesRoutesAnAccessPolicyMisses edits AccessPolicies: one
// naming a route has that route translated again, and the routes it
// does not name reused; one naming a Gateway has every route of that
// Gateway translated again. The output equals a cold translation's
// throughout.
func TestCacheSparesRoutesAnAccessPolicyMisses(t *testing.T) {
	in := loadGolden(t, "access.yaml")
	cloneLists(&in.Snapshot)
	writeBackAll(&in.Snapshot, translate.Translate(in))
	cache := translate.NewCache()
	cache.Translate(in)
	_, routes := cache.Stats()
	s := &in.Snapshot
	edit := func(name string, check func(reused, translated int) bool) {
		t.Helper()
		for i, p := range s.AccessPolicies {
			if p.Name != name {
				continue
			}
			c := newRV(p.DeepCopy())
			c.Generation++
			c.Spec.Audiences = append(c.Spec.Audiences, "edited")
			s.AccessPolicies[i] = c
			cold, warm := translate.Translate(in), cache.Translate(in)
			if got, want := render(t, warm), render(t, cold); !bytes.Equal(got, want) {
				t.Fatalf("AccessPolicy %s edited: with a Cache the output differs:\n%s", name, lineDiff(string(want), string(got)))
			}
			if reused, translated := cache.Stats(); !check(reused, translated) {
				t.Errorf("AccessPolicy %s edited: %d routes reused, %d translated", name, reused, translated)
			}
			return
		}
		t.Fatalf("access.yaml has no AccessPolicy %s", name)
	}
	edit("app-route", func(reused, translated int) bool { return translated == 1 && reused == routes-1 })
	edit("app-private", func(reused, translated int) bool { return translated == 1 && reused == routes-1 })
	edit("rpc-policy", func(reused, translated int) bool { return translated == 1 && reused == routes-1 })
	edit("gw-wide", func(reused, translated int) bool { return translated > 1 })
}
