package controller

import (
	"encoding/base64"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// A tunnel token Secret gives the tunnel ID, or a problem naming the
// Secret; the token's decoding is fuzzed in fuzz/ (FuzzTunnelToken).
func TestTunnelOfToken(t *testing.T) {
	token := base64.StdEncoding.EncodeToString([]byte(`{"a":"acc","t":"tid","s":"c2VjcmV0"}`))
	secrets := []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "tok"}, Data: map[string][]byte{"token": []byte(token + "\n")}}}
	if id, problem := tunnelOfToken(secrets, "team-a", "tok", "token"); id != "tid" || problem != "" {
		t.Errorf("a token: %q, %q", id, problem)
	}
	for _, c := range []struct{ ns, name, key string }{{"team-b", "tok", "token"}, {"team-a", "other", "token"}, {"team-a", "tok", "missing"}} {
		if id, problem := tunnelOfToken(secrets, c.ns, c.name, c.key); id != "" || problem == "" {
			t.Errorf("%+v: %q, %q; want a problem", c, id, problem)
		}
	}
}

// A tunnel joins the load balancers of the hostnames it serves, and no
// other.
func TestLoadBalancersOf(t *testing.T) {
	lbs := []translate.LoadBalancing{{Policy: "a/app", Hostname: "app.example.com"}, {Policy: "a/shop", Hostname: "shop.example.com"}}
	hosts := []translate.Hostname{{Name: "app.example.com", HTTP: true}, {Name: "other.example.com", HTTP: true}}
	got := loadBalancersOf(lbs, hosts)
	if len(got) != 1 || got[0].Policy != "a/app" {
		t.Errorf("got %+v, want a/app's alone", got)
	}
	if got := loadBalancersOf(lbs, nil); got != nil {
		t.Errorf("a tunnel without hostnames: %+v", got)
	}
}
