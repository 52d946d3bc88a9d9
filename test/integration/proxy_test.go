package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// A proxy watching the controller serves what users apply, to backends
// behind EndpointSlices; it keeps serving while the controller is away and
// converges when it is back.
func TestProxyFollowsTheController(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "proxied")
	const controllerName = "tunnelgate.dev/test-proxied"
	v1, v2 := netns.Addr(20).String(), netns.Addr(21).String()
	fixture.Backend(t, v1+":8080", "v1")
	fixture.Backend(t, v2+":8080", "v2")
	if err := env.Apply(ctx, []byte(basicObjects(ns, "proxied", controllerName, v1))); err != nil {
		t.Fatal(err)
	}
	r := startController(t, cl, controllerName, nil, "")
	_, proxy := startProxy(t, r)
	serves := func(wantBody, header, value string) func() (bool, string) {
		return func() (bool, string) {
			code, body, h, err := get(proxy, "app.example.com", "/hello")
			if err != nil {
				return false, err.Error()
			}
			if code != 200 || body != wantBody || (header != "" && h.Get(header) != value) {
				return false, fmt.Sprintf("%d %q %s=%q", code, body, header, h.Get(header))
			}
			return true, ""
		}
	}
	eventually(t, 30*time.Second, "the proxy serves the route", serves("v1 /hello", "", ""))

	// A route change reaches the proxy; how long it takes is logged (the
	// benchmark measures it at scale).
	gwAPI := cl.gw.GatewayV1()
	setHeader := func(value string) time.Time {
		t.Helper()
		start := time.Now()
		updateRoute(t, gwAPI, ns, "app", func(route *gwv1.HTTPRoute) {
			route.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
				ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Version", Value: value}}}}}
		})
		return start
	}
	start := setHeader("2")
	eventually(t, 30*time.Second, "the route change is served", serves("v1 /hello", "X-Version", "2"))
	t.Logf("route change applied to served: %v", time.Since(start).Round(time.Millisecond))

	// Pods move: the EndpointSlice now holds the other backend.
	slice, err := cl.kube.DiscoveryV1().EndpointSlices(ns).Get(ctx, "app-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slice.Endpoints[0].Addresses = []string{v2}
	if _, err := cl.kube.DiscoveryV1().EndpointSlices(ns).Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the new endpoint is served", serves("v2 /hello", "X-Version", "2"))

	// The controller goes away: the proxy keeps serving its last config.
	addr := strings.TrimPrefix(r.url, "http://")
	r.stop()
	for i := 0; i < 20; i++ {
		if ok, why := serves("v2 /hello", "X-Version", "2")(); !ok {
			t.Fatalf("with the controller down, request %d: %s", i, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A change made meanwhile reaches the proxy once a controller is back
	// on the same address.
	setHeader("3")
	startController(t, cl, controllerName, nil, addr)
	eventually(t, 30*time.Second, "the proxy converges after the restart", serves("v2 /hello", "X-Version", "3"))
}
