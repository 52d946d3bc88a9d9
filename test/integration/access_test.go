package integration_test

import (
	"context"
	"crypto/rsa"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/accesskeys"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/netns"
	"github.com/tunnelgate/tunnelgate/test/testaccess"
)

// An AccessPolicy attached to a route, on a real API server: the
// controller fetches the team's keys (from a key server of the test's,
// standing in for Cloudflare), the proxy refuses requests without a
// token Access issued and passes those with one, telling the backend the
// verified email; the policy and the route say so in their statuses.
// Detaching the policy opens the route again.
func TestAccessPolicyProtectsARoute(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "access")
	const controllerName = "tunnelgate.dev/test-access"
	const team, aud = "it.cloudflareaccess.com", "aud-integration"
	backend := netns.Addr(90).String()
	emailEcho(t, backend+":8080")

	key, rotated := testaccess.Key(t, "integration-team"), testaccess.Key(t, "integration-team-rotated")
	var published atomic.Pointer[[]byte] // the team's certs document
	publish := func(keys map[string]*rsa.PublicKey) {
		doc := testaccess.Certs(t, keys)
		published.Store(&doc)
	}
	publish(map[string]*rsa.PublicKey{"it-kid": &key.PublicKey})
	certs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(*published.Load())
	}))
	t.Cleanup(certs.Close)
	var r *running // set before keys run
	// Scheduled refreshes are an hour apart: a key published later is
	// fetched sooner only because a proxy asks.
	keys := accesskeys.New(accesskeys.Options{Client: certs.Client(), URL: func(string) string { return certs.URL + "/cdn-cgi/access/certs" },
		OnChange: func() { r.c.Changed() }, Refresh: time.Hour, MinInterval: time.Second})

	if err := env.Apply(ctx, []byte(basicObjects(ns, "access", controllerName, backend))); err != nil {
		t.Fatal(err)
	}
	r = startControllerOpts(t, cl, controllerName, ctlOpts{syncInterval: 20 * time.Millisecond, accessKeys: keys, unknownKeys: keys.Stale})
	kctx, stopKeys := context.WithCancel(ctx)
	defer stopKeys()
	go keys.Run(kctx)
	_, proxy := startProxy(t, r)

	now := time.Now()
	sign := func(key *rsa.PrivateKey, kid, email string) string {
		return testaccess.Sign(t, jose.RS256, key, kid, testaccess.JSON(t, map[string]any{
			"aud": []string{aud}, "iss": "https://" + team, "sub": "user-1", "email": email,
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}), nil)
	}
	token := sign(key, "it-kid", "ada@example.com")
	answersTo := func(token string, wantCode int, wantBody string) func() (bool, string) {
		return func() (bool, string) {
			h := http.Header{"Cf-Access-Authenticated-User-Email": {"forged@example.com"}}
			if token != "" {
				h.Set("Cf-Access-Jwt-Assertion", token)
			}
			code, body, err := getWith(proxy, "app.example.com", "/", h)
			if err != nil {
				return false, err.Error()
			}
			if code != wantCode || (wantBody != "" && body != wantBody) {
				return false, fmt.Sprintf("%d %q", code, body)
			}
			return true, ""
		}
	}
	answers := func(withToken bool, wantCode int, wantBody string) func() (bool, string) {
		if withToken {
			return answersTo(token, wantCode, wantBody)
		}
		return answersTo("", wantCode, wantBody)
	}
	// Open, the route serves, and the email a client forged never reaches
	// the backend: only the proxy writes identity headers.
	eventually(t, 30*time.Second, "the open route serves, without the forged email", answers(false, 200, "email="))

	apply := func(doc string) error { return env.Apply(ctx, []byte(doc)) }
	if err := apply(accessPolicy(ns, "protect", team, aud)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "without a token: 403", answers(false, 403, ""))
	eventually(t, 30*time.Second, "with a token: the verified email, not the forged one", answers(true, 200, "email=ada@example.com"))

	dyn := cl.dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("accesspolicies")).Namespace(ns)
	eventually(t, 30*time.Second, "the policy's status", func() (bool, string) {
		u, err := dyn.Get(ctx, "protect", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var p v1alpha1.AccessPolicy
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p)
		if err != nil || len(p.Status.Ancestors) != 1 {
			return false, fmt.Sprintf("%v %+v", err, p.Status.Ancestors)
		}
		a := p.Status.Ancestors[0]
		if a.AncestorRef.Name != "gw" || string(a.ControllerName) != controllerName {
			return false, fmt.Sprintf("ancestor %+v", a)
		}
		for _, c := range [][3]string{{"Accepted", "True", "Accepted"}, {"Programmed", "True", "Programmed"}, {"KeysReady", "True", "KeysFetched"}} {
			if ok, why := condIs(a.Conditions, c[0], metav1.ConditionStatus(c[1]), c[2]); !ok {
				return false, why
			}
		}
		return true, ""
	})
	routeAffected := func(want bool) func() (bool, string) {
		return func() (bool, string) {
			rt, err := cl.gw.GatewayV1().HTTPRoutes(ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil || len(rt.Status.Parents) != 1 {
				return false, fmt.Sprintf("%v %d parents", err, len(rt.Status.Parents))
			}
			c := findCond(rt.Status.Parents[0].Conditions, translate.ConditionAccessPolicyAffected)
			if (c != nil) != want {
				return false, fmt.Sprintf("AccessPolicyAffected %+v", c)
			}
			return true, ""
		}
	}
	eventually(t, 30*time.Second, "the route says it is protected", routeAffected(true))

	// Cloudflare rotates the team's key: it publishes a new one beside
	// the old, and Access signs with the new. The proxy refuses the
	// first such token (its config lacks the key) and tells the
	// controller, which fetches the keys again well before its hourly
	// refresh; the next config carries the new key.
	publish(map[string]*rsa.PublicKey{"it-kid": &key.PublicKey, "it-kid-2": &rotated.PublicKey})
	newToken := sign(rotated, "it-kid-2", "grace@example.com")
	if ok, why := answersTo(newToken, 403, "")(); !ok {
		t.Errorf("a token of a key the config lacks: %s, want 403", why)
	}
	eventually(t, 30*time.Second, "a token of the rotated key passes once the proxy asked for the keys",
		answersTo(newToken, 200, "email=grace@example.com"))
	eventually(t, 5*time.Second, "the old key's tokens still pass", answers(true, 200, "email=ada@example.com"))

	// The API server refuses what the CRD's rules refuse: a team domain
	// that is not Cloudflare Access's (the controller would fetch keys
	// there), a target of another kind.
	for _, bad := range []string{
		accessPolicy(ns, "elsewhere", "keys.attacker.example", aud),
		`apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: service, namespace: ` + ns + `}
spec:
  targetRefs: [{group: "", kind: Service, name: app}]
  teamDomain: ` + team + `
  audiences: [` + aud + `]
`,
	} {
		if err := apply(bad); err == nil {
			t.Errorf("the API server took:\n%s", bad)
		}
	}

	if err := dyn.Delete(ctx, "protect", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "detached: open again, and still no forged email", answers(false, 200, "email="))
	eventually(t, 30*time.Second, "the route no longer says it is protected", routeAffected(false))
}

func accessPolicy(ns, name, team, aud string) string {
	return fmt.Sprintf(`apiVersion: tunnelgate.dev/v1alpha1
kind: AccessPolicy
metadata: {name: %s, namespace: %s}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]
  teamDomain: %s
  audiences: [%s]
`, name, ns, team, aud)
}

// emailEcho serves, on addr until the test ends, the email header the
// proxy passed on: "email=<value>".
func emailEcho(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "email=%s", r.Header.Get("Cf-Access-Authenticated-User-Email"))
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
}

// getWith is get with request headers.
func getWith(proxyURL, host, path string, h http.Header) (int, string, error) {
	req, err := http.NewRequest("GET", proxyURL+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	req.Header = h
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}
