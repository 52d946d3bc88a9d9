package integration_test

import (
	"context"
	"crypto/rsa"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/accesskeys"
	"github.com/tunnelgate/tunnelgate/test/cffake"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

// An AccessPolicy that asks for its Access application, on the real API
// server, with the fake Cloudflare API: the controller creates the
// application over the route's hostname in the class's account, with a
// policy letting in the policy's emails, and marked as ours; the proxy
// takes tokens issued for that application's audience tag and refuses
// others; the policy says the application is ready. An application of
// someone else's on the same hostname is left alone. Deleting the policy
// deletes the application, and the route is open again.
func TestAccessPolicyMakesItsApplication(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	const apiToken, team = "integration-api-token", "app.cloudflareaccess.com"
	f := cffake.New(cffake.Options{Token: apiToken})
	t.Cleanup(f.Close)
	f.AddAccount("acc", "Integration")
	f.AddZone("zone", "example.com", "acc")
	foreign := f.AddAccessApp("acc", "theirs", "app.example.com", "their-tag")

	key := testaccess.Key(t, "app-team")
	certs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(testaccess.Certs(t, map[string]*rsa.PublicKey{"k": &key.PublicKey}))
	}))
	t.Cleanup(certs.Close)
	var r *running
	keys := accesskeys.New(accesskeys.Options{Client: certs.Client(), URL: func(string) string { return certs.URL + "/cdn-cgi/access/certs" },
		OnChange: func() { r.c.Changed() }})

	controllerName := "tunnelgate.dev/test-" + ns
	backend := netns.Addr(91).String()
	emailEcho(t, backend+":8080")
	if err := env.Apply(ctx, []byte(fixture.CloudflareClassYAML(ns, apiToken, ns, "")+
		fixture.ClassYAML(ns, controllerName, ns)+"---\n"+fixture.GatewayYAML(ns, "gw", ns, fixture.HTTP80)+fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules: [{backendRefs: [{name: app, port: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: %[1]s}
spec:
  ports: [{name: http, port: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: app-1
  namespace: %[1]s
  labels: {kubernetes.io/service-name: app}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [%[4]s], conditions: {ready: true}}]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: protect, namespace: %[1]s}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]
  teamDomain: %[5]s
  application: {sessionDuration: 8h}
  require: {emails: [ada@example.com]}
`, ns, controllerName, apiToken, backend, team))); err != nil {
		t.Fatal(err)
	}
	r = startControllerOpts(t, cl, controllerName, ctlOpts{syncInterval: 20 * time.Millisecond,
		cloudflare: f.URL(), cfDriftEvery: 500 * time.Millisecond, accessKeys: keys})
	kctx, stopKeys := context.WithCancel(ctx)
	defer stopKeys()
	go keys.Run(kctx)
	_, proxy := startProxy(t, r)

	ours := func() (cffake.AccessApp, bool) {
		for _, a := range f.AccessApps("acc") {
			if a.ID != foreign {
				return a, true
			}
		}
		return cffake.AccessApp{}, false
	}
	eventually(t, 30*time.Second, "the application made", func() (bool, string) {
		a, ok := ours()
		if !ok {
			return false, "none yet"
		}
		if a.Name != ns+"/protect" || !slices.Equal(a.Destinations, []string{"app.example.com"}) || a.SessionDuration != "8h" ||
			len(a.Tags) != 1 || !strings.HasPrefix(a.Tags[0], "tunnelgate-") || len(a.Policies) != 1 ||
			!slices.Equal(a.Policies[0].Include, []string{`{"email":{"email":"ada@example.com"}}`}) {
			return false, fmt.Sprintf("%+v", a)
		}
		return true, ""
	})
	app, _ := ours()
	sign := func(aud string) string {
		now := time.Now()
		return testaccess.Sign(t, jose.RS256, key, "k", testaccess.JSON(t, map[string]any{
			"aud": []string{aud}, "iss": "https://" + team, "sub": "u", "email": "ada@example.com",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), nil)
	}
	answers := func(token string, wantCode int) func() (bool, string) {
		return func() (bool, string) {
			h := http.Header{}
			if token != "" {
				h.Set("Cf-Access-Jwt-Assertion", token)
			}
			code, body, err := getWith(proxy, "app.example.com", "/", h)
			if err != nil || code != wantCode {
				return false, fmt.Sprintf("%d %q %v", code, body, err)
			}
			return true, ""
		}
	}
	eventually(t, 30*time.Second, "a token of the application passes", answers(sign(app.AUD), 200))
	for _, refused := range []string{"", sign("another-application")} {
		if ok, why := answers(refused, 403)(); !ok {
			t.Errorf("%.20q: %s, want 403", refused, why)
		}
	}
	dyn := cl.dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("accesspolicies")).Namespace(ns)
	eventually(t, 30*time.Second, "ApplicationReady on the policy", func() (bool, string) {
		u, err := dyn.Get(ctx, "protect", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var p v1alpha1.AccessPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil || len(p.Status.Ancestors) != 1 {
			return false, fmt.Sprintf("%v %+v", err, p.Status.Ancestors)
		}
		return condIs(p.Status.Ancestors[0].Conditions, "ApplicationReady", metav1.ConditionTrue, "ApplicationProgrammed")
	})

	// The API server refuses an application nobody could log in to, and
	// one whose policies would name groups.
	for _, bad := range []string{"require: {groups: [eng]}", ""} {
		doc := fmt.Sprintf(`apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: bad, namespace: %s}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]
  teamDomain: %s
  application: {}
  %s
`, ns, team, bad)
		if err := env.Apply(ctx, []byte(doc)); err == nil {
			t.Errorf("the API server took:\n%s", doc)
		}
	}

	if err := dyn.Delete(ctx, "protect", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the application deleted, the foreign one kept", func() (bool, string) {
		apps := f.AccessApps("acc")
		if len(apps) != 1 || apps[0].ID != foreign || len(f.AccessPolicies("acc")) != 0 {
			return false, fmt.Sprintf("%+v %+v", apps, f.AccessPolicies("acc"))
		}
		return true, ""
	})
	eventually(t, 30*time.Second, "the route open again", answers("", 200))
}
