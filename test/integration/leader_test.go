package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/controller"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// Two replicas: one leads and writes; the other only serves configs. When
// the leader goes, the other takes over and writes what changed since.
func TestOneLeaderWrites(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "leader")
	const controllerName = "tunnelgate.dev/test-leader"
	lease := func(id string) *controller.LeaderOptions {
		return &controller.LeaderOptions{Namespace: ns, Name: "tunnelgate-test", Identity: id,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 300 * time.Millisecond}
	}
	a := startController(t, cl, controllerName, lease("a"), "")
	b := startController(t, cl, controllerName, lease("b"), "")
	if err := env.Apply(ctx, []byte(basicObjects(ns, "leader", controllerName, netns.Addr(30).String()))); err != nil {
		t.Fatal(err)
	}
	var leader, follower *running
	eventually(t, 20*time.Second, "one leader", func() (bool, string) {
		switch {
		case a.c.Leader() && !b.c.Leader():
			leader, follower = a, b
		case b.c.Leader() && !a.c.Leader():
			leader, follower = b, a
		default:
			return false, fmt.Sprintf("a leads %v, b leads %v", a.c.Leader(), b.c.Leader())
		}
		return true, ""
	})
	routeAccepted := func(name string) func() (bool, string) {
		return func() (bool, string) {
			r, err := cl.gw.GatewayV1().HTTPRoutes(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range r.Status.Parents {
				if string(p.ControllerName) == controllerName {
					return condIs(p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
				}
			}
			return false, "no status of ours"
		}
	}
	eventually(t, 20*time.Second, "the route accepted", routeAccepted("app"))
	eventually(t, 20*time.Second, "both replicas publish the config", func() (bool, string) {
		return a.srv.Version() != "" && a.srv.Version() == b.srv.Version(), a.srv.Version() + " vs " + b.srv.Version()
	})
	// A loaded machine may move the lease between them; what must hold is
	// that a replica that never led never wrote.
	for _, r := range []*running{a, b} {
		if r.c.Stats.LeaderGained.Load() == 0 && r.c.Stats.StatusWrites.Load() != 0 {
			t.Errorf("a replica that never led wrote %d statuses", r.c.Stats.StatusWrites.Load())
		}
	}
	if a.c.Stats.StatusWrites.Load()+b.c.Stats.StatusWrites.Load() == 0 {
		t.Error("no replica wrote a status")
	}

	leader.stop()
	eventually(t, 20*time.Second, "the other replica leads", func() (bool, string) { return follower.c.Leader(), "not yet" })
	second := []byte(fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: second, namespace: %s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [second.example.com]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`, ns))
	if err := env.Apply(ctx, second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the new leader writes", routeAccepted("second"))
}
