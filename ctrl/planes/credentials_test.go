package planes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// A plane applied again before the owned informer shows the Secret
// written a moment ago keeps the credentials written then; the Secret in
// the cache is taken when there is no such memory (another leader wrote
// it); new ones are made only when neither has them.
func TestCredentialsKept(t *testing.T) {
	o, err := newOwned(fake.NewClientset(), func(objectKey, types.NamespacedName, string) {}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	p := &Provisioner{owned: o, leading: true, made: map[types.NamespacedName]credentials{}}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "gw"}, Spec: gwv1.GatewaySpec{GatewayClassName: "tg"}}
	params := v1alpha1.GatewayConfigSpec{DataPlane: v1alpha1.DataPlaneDedicated, ClassTunnel: true}
	plane := provision.Plane{Gateway: gw, Params: params, Secrets: provision.SecretsOf(gw, &params)}
	key := types.NamespacedName{Namespace: "team", Name: "gw"}

	first, err := p.credentialsOf(key, plane)
	if err != nil || first.token == "" || first.relay == nil {
		t.Fatalf("first: %+v, %v", first, err)
	}
	p.remember(key, first)
	again, err := p.credentialsOf(key, plane) // the cache shows no Secret yet
	if err != nil || again.token != first.token || string(again.relay.CA) != string(first.relay.CA) {
		t.Errorf("applied again before the cache caught up: new credentials")
	}

	p.forget(key)
	stored, err := NewRelayCredentials(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	token := "a-token-another-leader-wrote-0123456789"
	if err := o.secrets.GetStore().Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: plane.Secrets.Credentials},
		Data: map[string][]byte{provision.KeyConfigToken: []byte(token), provision.KeyRelayCA: stored.CA, provision.KeyRelayCert: stored.Cert,
			provision.KeyRelayKey: stored.Key, provision.KeyRelayClientCert: stored.ClientCert, provision.KeyRelayClientKey: stored.ClientKey}}); err != nil {
		t.Fatal(err)
	}
	cached, err := p.credentialsOf(key, plane)
	if err != nil || cached.token != token || string(cached.relay.CA) != string(stored.CA) {
		t.Errorf("without a memory of its own: not the Secret's credentials")
	}

	p.leading = false
	p.forget(key)
	p.remember(key, first)
	if _, ok := p.made[key]; ok {
		t.Error("remembered while not leading")
	}
}
