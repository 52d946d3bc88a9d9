// This file tests LoadBalancingPolicies on a real API server.

package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// A LoadBalancingPolicy on a real API server: the CRD fills in its
// defaults and refuses what its rules refuse; the controller accepts the
// policy on the Gateway serving its route, and says that without a tunnel
// the Gateway cannot be an origin. A newer policy on the same hostname is
// Conflicted.
func TestLoadBalancingPolicyStatus(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "lbpolicy")
	const controllerName = "tunnelgate.dev/test-lbpolicy"
	startController(t, cl, controllerName, nil, "")
	if err := env.Apply(ctx, []byte(basicObjects(ns, "lbpolicy", controllerName, netns.Addr(11).String()))); err != nil {
		t.Fatal(err)
	}
	apply := func(doc string) error { return env.Apply(ctx, []byte(doc)) }
	if err := apply(lbPolicy(ns, "app-lb", "pool: eu-west")); err != nil {
		t.Fatal(err)
	}
	dyn := cl.dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("loadbalancingpolicies")).Namespace(ns)
	get := func(name string) (*v1alpha1.LoadBalancingPolicy, error) {
		u, err := dyn.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var p v1alpha1.LoadBalancingPolicy
		return &p, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p)
	}
	p, err := get("app-lb")
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Spec; s.Weight == nil || *s.Weight != 100 || s.Enabled == nil || !*s.Enabled || s.Steering != v1alpha1.SteeringOff {
		t.Errorf("defaults: weight %v enabled %v steering %q", s.Weight, s.Enabled, s.Steering)
	}
	ancestorIs := func(name string, conds ...[3]string) func() (bool, string) {
		return func() (bool, string) {
			p, err := get(name)
			if err != nil {
				return false, err.Error()
			}
			if len(p.Status.Ancestors) != 1 {
				return false, fmt.Sprintf("ancestors %+v", p.Status.Ancestors)
			}
			a := p.Status.Ancestors[0]
			if a.AncestorRef.Name != "gw" || string(a.ControllerName) != controllerName {
				return false, fmt.Sprintf("ancestor %+v", a)
			}
			for _, c := range conds {
				if ok, why := condIs(a.Conditions, c[0], metav1.ConditionStatus(c[1]), c[2]); !ok {
					return false, why
				}
			}
			return true, ""
		}
	}
	eventually(t, 30*time.Second, "the policy accepted, with no tunnel to be an origin through",
		ancestorIs("app-lb", [3]string{"Accepted", "True", "Accepted"}, [3]string{translate.LBConditionReady, "False", "NoTunnel"}))

	if err := apply(lbPolicy(ns, "app-lb-newer", "pool: us-east")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the newer policy on the hostname Conflicted",
		ancestorIs("app-lb-newer", [3]string{"Accepted", "False", "Conflicted"}))

	// The API server refuses what the CRD's rules refuse.
	for _, bad := range []string{
		"pool: eu west",
		"pool: eu-west\n  failoverPools: [us-east]",
		"pool: eu-west\n  weight: 101",
		"pool: eu-west\n  steering: Fastest",
		"pool: eu-west\n  healthCheck: {interval: 5s}",
		"pool: eu-west\n  healthCheck: {interval: 10s, timeout: 10s}",
		"pool: eu-west\n  healthCheck: {path: /a/../b}",
		"pool: eu-west\n  healthCheck: {path: health}",
		"pool: eu-west\n  sessionAffinity: {type: Cookie, ttl: 200h}",
	} {
		if err := apply(lbPolicy(ns, "bad", bad)); err == nil {
			t.Errorf("the API server took:\n%s", bad)
		}
	}
	if err := apply(fmt.Sprintf(`apiVersion: tunnelgate.dev/v1alpha1
kind: LoadBalancingPolicy
metadata: {name: bad, namespace: %s}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app, sectionName: rule}]
  hostname: app.example.com
  pool: eu-west
`, ns)); err == nil {
		t.Error("the API server took an HTTPRoute target with a sectionName")
	}
}

func lbPolicy(ns, name, rest string) string {
	return fmt.Sprintf(`apiVersion: tunnelgate.dev/v1alpha1
kind: LoadBalancingPolicy
metadata: {name: %s, namespace: %s}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}]
  hostname: app.example.com
  %s
`, name, ns, rest)
}

// Two controllers on one API server, each with a Gateway and a route: a
// policy naming both routes gets one ancestor from each controller, for
// its own Gateway, and no TargetNotFound from either for the other's.
// Before the second Gateway's class exists, its route is nobody's and
// TargetNotFound; the entry goes once the class says whose it is.
func TestLoadBalancingPolicyTwoControllers(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "lbtwo")
	const ours, theirs = "tunnelgate.dev/test-lbtwo-a", "tunnelgate.dev/test-lbtwo-b"
	startController(t, cl, ours, nil, "")
	startController(t, cl, theirs, nil, "")
	objs := basicObjects(ns, "lbtwo-a", ours, netns.Addr(13).String()) + "---\n" +
		fixture.GatewayYAML(ns, "gw-b", "lbtwo-b", `{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}`) +
		fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app-b, namespace: %[1]s}
spec:
  parentRefs: [{name: gw-b}]
  hostnames: [app.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: LoadBalancingPolicy
metadata: {name: both, namespace: %[1]s}
spec:
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: app}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: app-b}
  hostname: app.example.com
  pool: eu-west
`, ns)
	if err := env.Apply(ctx, []byte(objs)); err != nil {
		t.Fatal(err)
	}
	dyn := cl.dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("loadbalancingpolicies")).Namespace(ns)
	get := func() (*v1alpha1.LoadBalancingPolicy, error) {
		u, err := dyn.Get(ctx, "both", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var p v1alpha1.LoadBalancingPolicy
		return &p, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p)
	}
	eventually(t, 30*time.Second, "app-b, of no class yet, TargetNotFound", func() (bool, string) {
		p, err := get()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range p.Status.Ancestors {
			if string(a.ControllerName) == ours && a.AncestorRef.Name == "app-b" {
				return condIs(a.Conditions, "Accepted", metav1.ConditionFalse, "TargetNotFound")
			}
		}
		return false, fmt.Sprintf("ancestors %+v", p.Status.Ancestors)
	})
	if err := env.Apply(ctx, []byte(fixture.ClassYAML("lbtwo-b", theirs, ""))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "one accepted ancestor from each controller, for its own Gateway", func() (bool, string) {
		p, err := get()
		if err != nil {
			return false, err.Error()
		}
		want := map[string]string{ours: "gw", theirs: "gw-b"}
		if len(p.Status.Ancestors) != len(want) {
			return false, fmt.Sprintf("ancestors %+v", p.Status.Ancestors)
		}
		for _, a := range p.Status.Ancestors {
			if want[string(a.ControllerName)] != string(a.AncestorRef.Name) {
				return false, fmt.Sprintf("ancestor %+v", a)
			}
			if ok, why := condIs(a.Conditions, "Accepted", metav1.ConditionTrue, "Accepted"); !ok {
				return false, string(a.ControllerName) + ": " + why
			}
		}
		return true, ""
	})
}
