package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/config/rbac"
	"github.com/tunnelgate/tunnelgate/ctrl/controller"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// The controller runs with only the rules of config/rbac, as the Helm
// chart installs it: its caches sync, it wins the Lease, writes statuses
// and the finalizer, records events and serves the proxy; and the
// identity can do nothing more, so a rule the controller needs but the
// file lacks fails here, not in a user's cluster.
func TestControllerLeastPrivilege(t *testing.T) {
	env := shared.Env(t)
	admin := newClients(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	const user = "tunnelgate-controller-test"

	// The rules, the Role in the controller's namespace, bound to user.
	roles := strings.Replace(string(rbac.ControllerYAML),
		"name: tunnelgate-controller-leader-election", "name: tunnelgate-controller-leader-election\n  namespace: "+ns, 1)
	if err := env.Apply(ctx, []byte(roles+fmt.Sprintf(`
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: tunnelgate-controller-test}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tunnelgate-controller}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[2]s}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tunnelgate-controller-leader-election, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tunnelgate-controller-leader-election}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[2]s}]
`, ns, user))); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	cl := clientsFor(t, cfg)

	// The identity is really limited.
	if _, err := cl.kube.CoreV1().Secrets(ns).Get(ctx, "any", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("reading one Secret: %v, want forbidden (the controller lists, it never gets)", err)
	}
	if err := cl.kube.CoreV1().Secrets(ns).Delete(ctx, "any", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting a Secret: %v, want forbidden", err)
	}
	if err := cl.kube.CoreV1().ConfigMaps(ns).Delete(ctx, "any", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting a ConfigMap: %v, want forbidden", err)
	}

	const controllerName = "tunnelgate.dev/test-rbac"
	r := startController(t, cl, controllerName, &controller.LeaderOptions{Namespace: ns, Name: "tunnelgate", Identity: "only",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 300 * time.Millisecond}, "")
	fixture.Backend(t, netns.Addr(60).String()+":8080", "rbac")
	if err := env.Apply(ctx, []byte(basicObjects(ns, "rbac", controllerName, netns.Addr(60).String())+fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broken, namespace: %s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [broken.example.com]
  rules: [{backendRefs: [{name: missing, port: 80}]}]
`, ns))); err != nil {
		t.Fatal(err)
	}

	eventually(t, 30*time.Second, "caches synced and the Lease won", func() (bool, string) {
		return r.c.Ready() && r.c.Leader(), fmt.Sprintf("ready %v, leader %v", r.c.Ready(), r.c.Leader())
	})
	gwAPI := admin.gw.GatewayV1()
	eventually(t, 30*time.Second, "the GatewayClass accepted and finalized", func() (bool, string) {
		gc, err := gwAPI.GatewayClasses().Get(ctx, "rbac", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(gc.Finalizers) == 0 {
			return false, "no finalizer"
		}
		return condIs(gc.Status.Conditions, "Accepted", metav1.ConditionTrue, "")
	})
	eventually(t, 30*time.Second, "the Gateway programmed", func() (bool, string) {
		g, err := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return condIs(g.Status.Conditions, "Programmed", metav1.ConditionTrue, "")
	})
	// A Gateway's parameters, a GatewayConfig, are watched under these
	// rules too: missing, the Gateway is refused; once it exists (Shared),
	// accepted.
	tenant := fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: tenant, namespace: %s}
spec:
  gatewayClassName: rbac
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "tenant.example.com"}]
  infrastructure:
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: tenant}
`, ns)
	if err := env.Apply(ctx, []byte(tenant)); err != nil {
		t.Fatal(err)
	}
	tenantAccepted := func(status metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			g, err := gwAPI.Gateways(ns).Get(ctx, "tenant", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return condIs(g.Status.Conditions, "Accepted", status, reason)
		}
	}
	eventually(t, 30*time.Second, "the Gateway with a missing GatewayConfig refused", tenantAccepted(metav1.ConditionFalse, "InvalidParameters"))
	if err := env.Apply(ctx, []byte(fmt.Sprintf(`
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: tenant, namespace: %s}
spec: {dataPlane: Shared}
`, ns))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Gateway accepted once its GatewayConfig exists", tenantAccepted(metav1.ConditionTrue, "Accepted"))

	eventually(t, 30*time.Second, "the broken route's event", func() (bool, string) {
		evs, err := admin.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "broken" && e.Type == corev1.EventTypeWarning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none a warning on route broken", len(evs.Items))
	})
	_, proxy := startProxy(t, r)
	eventually(t, 20*time.Second, "the proxy serving the route", func() (bool, string) {
		code, body, _, err := get(proxy, "app.example.com", "/x")
		return err == nil && code == 200 && body == "rbac /x", fmt.Sprint(code, body, err)
	})
	if n := r.c.Stats.SyncErrors.Load(); n != 0 {
		t.Errorf("%d syncs failed to write", n)
	}
}
