package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// BenchmarkApplyToServed measures what a user waits for: the time from
// an HTTPRoute update sent to the API server to a proxy serving it, with
// 1,000 and then 3,000 routes in the cluster. Each op changes one route's
// response header and polls the proxy every millisecond until the new
// value comes back. The path is the real one: informer, the controller's
// default pacing (a lone change is synced at once), translation,
// publish, long-poll, proxy load. Ops are a lone change each: before one
// starts, the controller has been idle for a while (untimed), so no op
// waits behind the last one's status writes.
//
// Then add: a new route created, timed until the proxy serves it;
// delete: a route deleted, timed until the proxy answers 404 for it; and
// gateway: a listener added to the Gateway, timed until the proxy serves
// the route waiting for it.
//
// Then burst: 1,000 route updates sent as fast as 32 clients can, timed
// from the first update sent until the proxy serves every one of them;
// reported as ms-to-served (from the first update), ms-after-last (from
// the last update's answer) and publishes (new config versions).
func BenchmarkApplyToServed(b *testing.B) {
	env := shared.Env(b)
	cl := newClients(b, env)
	ctx := context.Background()
	ns := namespace(b, cl, "bench")
	const controllerName = "tunnelgate.dev/bench"
	fixture.Backend(b, netns.Addr(40).String()+":8080", "bench")
	if err := env.Apply(ctx, []byte(basicObjects(ns, "bench", controllerName, netns.Addr(40).String()))); err != nil {
		b.Fatal(err)
	}
	// The user's writes go through clients of their own: sharing the
	// controller's would put them behind its status writes (client-side
	// rate limits).
	gwAPI := newClients(b, env).gw.GatewayV1()
	routes := 1 // basicObjects' route "app"
	addRoutes := func(b *testing.B, total int) {
		createRoutes(b, gwAPI, ns, routes, total)
		routes = total
	}
	addRoutes(b, 1000)
	r := startControllerWith(b, cl, controllerName, nil, "", 0)
	_, proxy := startProxy(b, r)
	// Steady: the last route served, and every route's status written
	// (until then, translations stamp the routes without one with the
	// time, and a change costs a full translation).
	waitServed := func(b *testing.B) {
		eventually(b, 120*time.Second, "the last route served", func() (bool, string) {
			code, body, _, err := get(proxy, fmt.Sprintf("r-%d.example.com", routes-1), "/")
			return err == nil && code == 200, fmt.Sprint(code, body, err)
		})
		eventually(b, 300*time.Second, "every route's status written", func() (bool, string) {
			list, err := gwAPI.HTTPRoutes(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			without := 0
			for _, r := range list.Items {
				if len(r.Status.Parents) == 0 {
					without++
				}
			}
			return without == 0 && len(list.Items) == routes, fmt.Sprintf("%d of %d routes without a status", without, len(list.Items))
		})
	}
	waitServed(b)

	// Setup above runs once (this function, with sub-benchmarks, runs
	// once); each sub-benchmark runs as often as the benchmark needs.
	op := 0
	for _, n := range []int{1000, 3000} {
		if n > routes {
			addRoutes(b, n)
			waitServed(b)
		}
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			for range b.N {
				op++
				b.StopTimer()
				time.Sleep(300 * time.Millisecond) // a lone change: the controller is idle
				route := getRoute(b, gwAPI, ns, "app")
				b.StartTimer()
				applyAndWait(b, gwAPI, route, proxy, op)
			}
		})
	}
	b.Run(fmt.Sprintf("add/routes=%d", routes), func(b *testing.B) {
		for range b.N {
			op++
			b.StopTimer()
			time.Sleep(300 * time.Millisecond)
			b.StartTimer()
			addAndWait(b, gwAPI, ns, proxy, op)
		}
	})
	b.Run(fmt.Sprintf("delete/routes=%d", routes), func(b *testing.B) {
		for range b.N {
			op++
			b.StopTimer()
			deleteAndWait(b, gwAPI, ns, proxy, op)
		}
	})
	b.Run(fmt.Sprintf("gateway/routes=%d", routes), func(b *testing.B) {
		for range b.N {
			op++
			b.StopTimer()
			gatewayAndWait(b, gwAPI, ns, proxy, op)
		}
	})
	b.Run(fmt.Sprintf("burst=1000/routes=%d", routes), func(b *testing.B) {
		for range b.N {
			op++
			burstAndWait(b, gwAPI, ns, proxy, r, 1000, op)
		}
	})
}

// createRoutes creates routes r-<from> to r-<to-1>, one hostname each,
// with 32 requests in flight (one at a time would take longer than the
// benchmark).
func createRoutes(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, ns string, from, to int) {
	var wg sync.WaitGroup
	errs := make(chan error, to-from)
	sem := make(chan struct{}, 32)
	for i := from; i < to; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := benchRoute(ns, fmt.Sprintf("r-%d", i))
			if _, err := gwAPI.HTTPRoutes(ns).Create(context.Background(), r, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// benchRoute is the benchmark's route called name: hostname
// <name>.example.com on Gateway gw, to Service app port 80.
func benchRoute(ns, name string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(name + ".example.com")},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "app", Port: ptr(gwv1.PortNumber(80))}}}}}},
		}}
}

func getRoute(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, ns, name string) *gwv1.HTTPRoute {
	route, err := gwAPI.HTTPRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return route
}

// withHeader is route with its first rule setting response header
// X-Op: value.
func withHeader(route *gwv1.HTTPRoute, value string) *gwv1.HTTPRoute {
	route = route.DeepCopy()
	route.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
		ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Op", Value: value}}}}}
	return route
}

// applyAndWait updates route to set X-Op to a value for op and returns
// when the proxy serves it.
func applyAndWait(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, route *gwv1.HTTPRoute, proxy string, op int) {
	value := fmt.Sprint("op-", op)
	patchRules(b, gwAPI, withHeader(route, value))
	host := string(route.Spec.Hostnames[0])
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		_, _, h, err := get(proxy, host, "/")
		if err == nil && h.Get("X-Op") == value {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("op %d not served within 30s", op)
		}
	}
}

// addAndWait creates a route of a hostname of its own and returns when
// the proxy serves it; then, untimed, deletes it and waits until the
// proxy no longer does, so every op adds to the same number of routes.
func addAndWait(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, ns, proxy string, op int) {
	name := fmt.Sprint("added-", op)
	host := name + ".example.com"
	if _, err := gwAPI.HTTPRoutes(ns).Create(context.Background(), benchRoute(ns, name), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitCode(b, proxy, host, 200, op)
	b.StopTimer()
	if err := gwAPI.HTTPRoutes(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	waitCode(b, proxy, host, 404, op)
	b.StartTimer()
}

// deleteAndWait creates a route and waits until it is served, untimed,
// with the controller idle after; then starts the timer, deletes the
// route and waits until the proxy answers 404 for it. The timer is
// stopped when it is called.
func deleteAndWait(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, ns, proxy string, op int) {
	name := fmt.Sprint("deleted-", op)
	host := name + ".example.com"
	if _, err := gwAPI.HTTPRoutes(ns).Create(context.Background(), benchRoute(ns, name), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitCode(b, proxy, host, 200, op)
	time.Sleep(300 * time.Millisecond) // a lone change: the controller is idle
	b.StartTimer()
	if err := gwAPI.HTTPRoutes(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	waitCode(b, proxy, host, 404, op)
}

// gatewayAndWait creates a route for a hostname no listener of the
// Gateway takes, untimed, with the controller idle after; then starts
// the timer, adds a listener for it to the Gateway and waits until the
// proxy serves the route. Untimed again, it removes both. The timer is
// stopped when it is called.
func gatewayAndWait(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, ns, proxy string, op int) {
	ctx := context.Background()
	name := fmt.Sprint("gwop-", op)
	host := name + ".other.test"
	route := benchRoute(ns, name)
	route.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(host)}
	if _, err := gwAPI.HTTPRoutes(ns).Create(ctx, route, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a lone change: the controller is idle
	listener := gwv1.Listener{Name: gwv1.SectionName(name), Protocol: gwv1.HTTPProtocolType, Port: 80, Hostname: ptr(gwv1.Hostname("*.other.test"))}
	b.StartTimer()
	updateGateway(b, gwAPI, ns, func(g *gwv1.Gateway) { g.Spec.Listeners = append(g.Spec.Listeners, listener) })
	waitCode(b, proxy, host, 200, op)
	b.StopTimer()
	updateGateway(b, gwAPI, ns, func(g *gwv1.Gateway) {
		g.Spec.Listeners = slices.DeleteFunc(g.Spec.Listeners, func(l gwv1.Listener) bool { return l.Name == listener.Name })
	})
	if err := gwAPI.HTTPRoutes(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	waitCode(b, proxy, host, 404, op)
}

// updateGateway applies change to the Gateway gw, again on a conflict
// (the controller writes its status).
func updateGateway(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, ns string, change func(*gwv1.Gateway)) {
	for try := 0; ; try++ {
		g, err := gwAPI.Gateways(ns).Get(context.Background(), "gw", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		change(g)
		_, err = gwAPI.Gateways(ns).Update(context.Background(), g, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || try == 10 {
			b.Fatal(err)
		}
	}
}

// waitCode polls the proxy every millisecond until host answers want.
func waitCode(b *testing.B, proxy, host string, want, op int) {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if code, _, _, err := get(proxy, host, "/"); err == nil && code == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("op %d: %s not %d within 30s", op, host, want)
		}
	}
}

// patchRules writes route's rules over the stored route's with a merge
// patch, which the controller's status writes in between cannot make
// conflict, as an update could.
func patchRules(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, route *gwv1.HTTPRoute) {
	if err := patchRulesErr(gwAPI, route); err != nil {
		b.Fatal(err)
	}
}

func patchRulesErr(gwAPI gwapiv1.GatewayV1Interface, route *gwv1.HTTPRoute) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"rules": route.Spec.Rules}})
	if err != nil {
		return err
	}
	_, err = gwAPI.HTTPRoutes(route.Namespace).Patch(context.Background(), route.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// burstAndWait updates routes r-1 to r-n (X-Op: a value for op) from 32
// clients at once, then waits until the proxy serves every update, and
// reports how long that took and how many configs were published.
func burstAndWait(b *testing.B, gwAPI gwapiv1.GatewayV1Interface, ns, proxy string, r *running, n, op int) {
	b.StopTimer()
	time.Sleep(300 * time.Millisecond)
	value := fmt.Sprint("op-", op)
	var updates []*gwv1.HTTPRoute
	for i := 1; i <= n; i++ {
		updates = append(updates, withHeader(getRoute(b, gwAPI, ns, fmt.Sprintf("r-%d", i)), value))
	}
	published := r.published.Load()
	b.StartTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for _, u := range updates {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := patchRulesErr(gwAPI, u); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	sent := time.Now()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	// Every update is served once the last route to be checked is: check
	// each, from the first, until all answer with the new value.
	for i, deadline := 1, time.Now().Add(60*time.Second); i <= n; {
		_, _, h, err := get(proxy, fmt.Sprintf("r-%d.example.com", i), "/")
		if err == nil && h.Get("X-Op") == value {
			i++
			continue
		}
		if time.Now().After(deadline) {
			b.Fatalf("burst %d: r-%d not served within 60s", op, i)
		}
		time.Sleep(time.Millisecond)
	}
	done := time.Now()
	b.StopTimer()
	b.ReportMetric(float64(done.Sub(start).Milliseconds()), "ms-to-served")
	b.ReportMetric(float64(done.Sub(sent).Milliseconds()), "ms-after-last")
	b.ReportMetric(float64(r.published.Load()-published), "publishes")
	b.StartTimer()
}

func ptr[T any](v T) *T { return &v }
