package integration_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// BenchmarkApplyToServed measures what a user waits for: the time from an
// HTTPRoute update accepted by the API server to a proxy serving it, with
// 1,000 routes in the cluster. Each op changes one route's response
// header and polls the proxy until the new value comes back. The path is
// the real one: informer, debounce (the controller's default, 100 ms),
// translation, publish, long-poll, proxy load.
func BenchmarkApplyToServed(b *testing.B) {
	const routes = 1000
	env := shared.Env(b)
	cl := newClients(b, env)
	ctx := context.Background()
	ns := namespace(b, cl, "bench")
	const controllerName = "tunnelgate.dev/bench"
	fixture.Backend(b, netns.Addr(40).String()+":8080", "bench")
	if err := env.Apply(ctx, []byte(basicObjects(ns, "bench", controllerName, netns.Addr(40).String()))); err != nil {
		b.Fatal(err)
	}
	// The other 999 routes, created concurrently (one at a time would
	// take longer than the benchmark).
	gwAPI := cl.gw.GatewayV1()
	var wg sync.WaitGroup
	errs := make(chan error, routes)
	sem := make(chan struct{}, 32)
	for i := 1; i < routes; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r-%d", i), Namespace: ns},
				Spec: gwv1.HTTPRouteSpec{
					CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
					Hostnames:       []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("r-%d.example.com", i))},
					Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
						BackendObjectReference: gwv1.BackendObjectReference{Name: "app", Port: ptr(gwv1.PortNumber(80))}}}}}},
				}}
			if _, err := gwAPI.HTTPRoutes(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	r := startControllerWith(b, cl, controllerName, nil, "", 100*time.Millisecond)
	_, proxy := startProxy(b, r)
	eventually(b, 60*time.Second, "the last route served", func() (bool, string) {
		code, body, _, err := get(proxy, fmt.Sprintf("r-%d.example.com", routes-1), "/")
		return err == nil && code == 200, fmt.Sprint(code, body, err)
	})

	// Setup above runs once (this function, with sub-benchmarks, runs
	// once); the sub-benchmark runs as often as the benchmark needs.
	op := 0
	b.Run("routes=1000", func(b *testing.B) {
		for range b.N {
			op++
			applyAndWait(b, gwAPI, ns, proxy, op)
		}
	})
}

// applyAndWait changes route app's response header to a value for op and
// returns when the proxy serves it.
func applyAndWait(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, ns, proxy string, i int) {
	value := fmt.Sprint("op-", i)
	start := time.Now()
	updateRoute(b, gwAPI, ns, "app", func(route *gwv1.HTTPRoute) {
		route.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Op", Value: value}}}}}
	})
	for deadline := start.Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		_, _, h, err := get(proxy, "app.example.com", "/")
		if err == nil && h.Get("X-Op") == value {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("op %d not served within 30s", i)
		}
	}
}

func ptr[T any](v T) *T { return &v }
