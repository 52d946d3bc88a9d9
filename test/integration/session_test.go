package integration_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/sessionkeys"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// Session persistence across the proxies of one controller: a client
// pinned to an endpoint by one proxy keeps it through another, after both
// restart, and through a rotation of the session keys (the old key still
// accepted while it is the previous one; its tokens refused once it is
// gone, while tokens of the new key hold).
func TestSessionsHoldAcrossProxiesRestartsAndRotation(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "sessions")
	const controllerName = "tunnelgate.dev/test-sessions"

	keyDir := t.TempDir()
	writeSessionKeys(t, keyDir, "session key A 0123456789abcdef", "")
	r := startControllerOpts(t, cl, controllerName, ctlOpts{syncInterval: 20 * time.Millisecond, sessionKeys: keyDir})

	var addrs []string
	for i, n := range []int{120, 121, 122} {
		a := netns.Addr(n).String()
		fixture.Backend(t, a+":8080", fmt.Sprintf("backend-%d", i))
		addrs = append(addrs, a)
	}
	if err := env.Apply(ctx, []byte(sessionObjects(ns, controllerName, addrs))); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	start := func(name string) (*dataplane.Proxy, string, func()) {
		return startProxyCached(t, r, filepath.Join(dir, name+".json"))
	}
	pa, ua, stopA := start("a")
	pb, ub, stopB := start("b")
	for _, u := range []string{ua, ub} {
		eventually(t, 20*time.Second, "the route served by "+u, func() (bool, string) {
			res := sessGet(t, u, "")
			return res.status == 200, fmt.Sprint(res)
		})
	}

	first := sessGet(t, ua, "")
	if first.status != 200 || first.cookie == "" {
		t.Fatalf("first request through proxy A: %+v; want 200 and a session cookie", first)
	}
	pinned := func(when, u, cookie string) {
		t.Helper()
		for range 5 {
			if got := sessGet(t, u, cookie); got.status != 200 || got.body != first.body {
				t.Fatalf("%s: through %s the session reached %q (%d); want %q", when, u, got.body, got.status, first.body)
			}
		}
	}
	pinned("through the other proxy", ub, first.cookie)

	// Both proxies restart; the keys come back from the controller.
	stopA()
	stopB()
	pa, ua, _ = start("a2")
	pb, ub, _ = start("b2")
	for _, u := range []string{ua, ub} {
		eventually(t, 20*time.Second, "the restarted proxy "+u+" serving", func() (bool, string) {
			res := sessGet(t, u, "")
			return res.status == 200, fmt.Sprint(res)
		})
	}
	pinned("after both proxies restarted", ua, first.cookie)
	pinned("after both proxies restarted", ub, first.cookie)

	// Rotation: B signs, A is still accepted.
	rotate := func(current, previous string) {
		t.Helper()
		before := pa.Version()
		writeSessionKeys(t, keyDir, current, previous)
		if !r.keys.Reload() {
			t.Fatal("the controller did not see the new keys")
		}
		for _, p := range []*dataplane.Proxy{pa, pb} {
			eventually(t, 20*time.Second, "a proxy serving the new keys", func() (bool, string) {
				return p.Version() != before, p.Version()
			})
		}
	}
	rotate("session key B 0123456789abcdef", "session key A 0123456789abcdef")
	pinned("during the rotation, a token of the old key", ua, first.cookie)
	pinned("during the rotation, a token of the old key", ub, first.cookie)
	second := sessGet(t, ub, "")
	if second.cookie == "" || second.cookie == first.cookie {
		t.Fatalf("a new session during the rotation: %+v; want a new cookie", second)
	}
	for range 5 {
		if got := sessGet(t, ua, second.cookie); got.body != second.body {
			t.Fatalf("a session of the new key moved from %q to %q", second.body, got.body)
		}
	}

	// The old key leaves: its tokens start new sessions; the new key's hold.
	rotate("session key B 0123456789abcdef", "")
	if got := sessGet(t, ua, first.cookie); got.cookie == "" || got.cookie == first.cookie {
		t.Errorf("a token of the removed key: %+v; want it refused and a new session cookie", got)
	}
	for _, u := range []string{ua, ub} {
		if got := sessGet(t, u, second.cookie); got.body != second.body || got.cookie != "" && got.cookie == second.cookie {
			t.Errorf("through %s after the old key left, the new key's session reached %q; want %q", u, got.body, second.body)
		}
	}
}

func writeSessionKeys(t *testing.T, dir, current, previous string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, sessionkeys.CurrentFile), []byte(current), 0o600); err != nil {
		t.Fatal(err)
	}
	prev := filepath.Join(dir, sessionkeys.PreviousFile)
	if previous == "" {
		os.Remove(prev)
	} else if err := os.WriteFile(prev, []byte(previous), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sessionObjects: a Gateway, the Service app of addrs and an HTTPRoute
// pinning clients to one of them with a session cookie "pin".
func sessionObjects(ns, controllerName string, addrs []string) string {
	return fixture.ClassYAML("sessions", controllerName, "") + "---\n" +
		fixture.GatewayYAML(ns, "gw", "sessions", `{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}`) +
		fmt.Sprintf(`%[3]s---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
    sessionPersistence: {type: Cookie, cookie: {name: pin}}
`, ns, controllerName, fixture.AppBackend(ns, addrs...))
}

type sessResult struct {
	status       int
	body, cookie string // cookie: the value of the pin cookie set, if any
}

// sessGet requests app.example.com through a proxy with the pin cookie
// (none if empty).
func sessGet(t *testing.T, proxyURL, cookie string) sessResult {
	t.Helper()
	req, err := http.NewRequest("GET", proxyURL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "app.example.com"
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "pin", Value: cookie})
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return sessResult{body: err.Error()}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := sessResult{status: res.StatusCode, body: string(b)}
	for _, c := range res.Cookies() {
		if c.Name == "pin" {
			out.cookie = c.Value
		}
	}
	return out
}
