package controller

import (
	"encoding/base64"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A tunnel token Secret a GatewayConfig names is the user's to fill: what
// it holds gives the tunnel ID or a problem naming the Secret, never both,
// never a panic.
func FuzzTunnelOfToken(f *testing.F) {
	f.Add([]byte(base64.StdEncoding.EncodeToString([]byte(`{"a":"acc","t":"6ff42ae2-765d-4adf-8112-31c55c1551ef","s":"c2VjcmV0"}`))))
	f.Add([]byte(base64.StdEncoding.EncodeToString([]byte(`{"a":"acc"}`))))
	f.Add([]byte(base64.StdEncoding.EncodeToString([]byte(`["t"]`))))
	f.Add([]byte("not base64!"))
	f.Add([]byte("  \n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, value []byte) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "tok"}, Data: map[string][]byte{"token": value}}
		id, problem := tunnelOfToken([]*corev1.Secret{s}, "team-a", "tok", "token")
		if (id == "") == (problem == "") {
			t.Fatalf("id %q and problem %q: want exactly one", id, problem)
		}
	})
}

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
