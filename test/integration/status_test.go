package integration_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// The objects of a small cluster: a class of controller, a Gateway with
// one HTTP listener, a Service whose EndpointSlice holds backendAddr, and
// a route to it.
func basicObjects(ns, class, controller, backendAddr string) string {
	return fixture.ClassYAML(class, controller, "") + "---\n" +
		fixture.GatewayYAML(ns, "gw", class, `{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}`) +
		fmt.Sprintf(`%[5]s
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
`, ns, class, controller, backendAddr, fixture.AppBackend(ns, backendAddr))
}

// A user applies Gateway API objects and reads, with kubectl, what the
// controller decided; the statuses follow every change, and a condition
// turning False is an event on the object.
func TestStatusesFollowObjects(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "statuses")
	const controllerName = "tunnelgate.dev/test-statuses"
	startController(t, cl, controllerName, nil, "")
	if err := env.Apply(ctx, []byte(basicObjects(ns, "statuses", controllerName, netns.Addr(10).String()))); err != nil {
		t.Fatal(err)
	}

	gwAPI := cl.gw.GatewayV1()
	eventually(t, 20*time.Second, "GatewayClass accepted, with the finalizer", func() (bool, string) {
		gc, err := gwAPI.GatewayClasses().Get(ctx, "statuses", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !slices.Contains(gc.Finalizers, translate.GatewayClassFinalizer) {
			return false, "no finalizer"
		}
		return condIs(gc.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	})
	gatewayIs := func(attached int32) func() (bool, string) {
		return func() (bool, string) {
			g, err := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if ok, why := condIs(g.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed"); !ok {
				return false, why
			}
			if len(g.Status.Listeners) != 1 || g.Status.Listeners[0].AttachedRoutes != attached {
				return false, fmt.Sprintf("listeners %+v", g.Status.Listeners)
			}
			return condIs(g.Status.Listeners[0].Conditions, "Programmed", metav1.ConditionTrue, "")
		}
	}
	eventually(t, 20*time.Second, "Gateway programmed with one attached route", gatewayIs(1))
	routeIs := func(typ string, status metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			r, err := gwAPI.HTTPRoutes(ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range r.Status.Parents {
				if string(p.ControllerName) == controllerName {
					if p.Conditions[0].ObservedGeneration != r.Generation {
						return false, "status of an older generation"
					}
					return condIs(p.Conditions, typ, status, reason)
				}
			}
			return false, "no parent status of ours"
		}
	}
	eventually(t, 20*time.Second, "route accepted", routeIs("Accepted", metav1.ConditionTrue, "Accepted"))
	eventually(t, 20*time.Second, "route refs resolved", routeIs("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs"))

	// The backend goes away: ResolvedRefs turns False, once, as an event.
	route := updateRoute(t, gwAPI, ns, "app", func(route *gwv1.HTTPRoute) {
		route.Spec.Rules[0].BackendRefs[0].Name = "missing"
	})
	eventually(t, 20*time.Second, "route reports the missing backend", routeIs("ResolvedRefs", metav1.ConditionFalse, "BackendNotFound"))
	eventually(t, 20*time.Second, "a Warning event on the route", func() (bool, string) {
		evs, err := cl.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=app,involvedObject.kind=HTTPRoute"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Type == "Warning" && e.Reason == "BackendNotFound" && e.InvolvedObject.UID == route.UID {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none a BackendNotFound warning with the route's UID", len(evs.Items))
	})

	// A rule the proxy cannot serve is dropped, and said so.
	re := gwv1.PathMatchRegularExpression
	bad := "/(["
	updateRoute(t, gwAPI, ns, "app", func(route *gwv1.HTTPRoute) {
		route.Spec.Rules[0].BackendRefs[0].Name = "app"
		route.Spec.Rules = append(route.Spec.Rules, gwv1.HTTPRouteRule{
			Matches:     []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &re, Value: &bad}}},
			BackendRefs: route.Spec.Rules[0].BackendRefs,
		})
	})
	eventually(t, 20*time.Second, "route partially invalid", routeIs("PartiallyInvalid", metav1.ConditionTrue, "UnsupportedValue"))
	eventually(t, 20*time.Second, "route refs resolved again", routeIs("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs"))

	// Deleted and made again under its name at once (as the conformance
	// suite does between tests), with the same spec and generation: the
	// new object has no status, and the output for it is the one last
	// written, which must not hide that.
	twin := func() *gwv1.HTTPRoute {
		r, err := gwAPI.HTTPRoutes(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r2 := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "twin", Namespace: ns}, Spec: r.Spec}
		if r2, err = gwAPI.HTTPRoutes(ns).Create(ctx, r2, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return r2
	}
	twinAccepted := func() (bool, string) {
		r, err := gwAPI.HTTPRoutes(ns).Get(ctx, "twin", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range r.Status.Parents {
			if string(p.ControllerName) == controllerName {
				return condIs(p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			}
		}
		return false, "no parent status of ours"
	}
	twin()
	eventually(t, 20*time.Second, "the twin route accepted", twinAccepted)
	if err := gwAPI.HTTPRoutes(ns).Delete(ctx, "twin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if twin().Generation != 1 {
		t.Fatal("the twin's generation is not 1")
	}
	eventually(t, 20*time.Second, "the twin made again has a status", twinAccepted)
	if err := gwAPI.HTTPRoutes(ns).Delete(ctx, "twin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Deleting the route frees the listener; deleting the Gateway frees
	// the class, whose finalizer goes.
	if err := gwAPI.HTTPRoutes(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "no route attached", gatewayIs(0))
	if err := gwAPI.Gateways(ns).Delete(ctx, "gw", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "GatewayClass finalizer removed", func() (bool, string) {
		gc, err := gwAPI.GatewayClasses().Get(ctx, "statuses", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !slices.Contains(gc.Finalizers, translate.GatewayClassFinalizer), fmt.Sprint(gc.Finalizers)
	})
}
