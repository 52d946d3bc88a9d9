// This file tests the rotation of the class tunnel's credential on the real node.

package chart

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// A rotation of the class tunnel's credential, asked on demand, loses no
// request: the chart installed on the real node with a tunnel the
// controller manages, load through the edge stand-in (which checks a
// connector's token when it registers, as Cloudflare's edge does), and
// the GatewayClassConfig annotated. The controller sets a new secret in
// the Cloudflare fake, writes the token read back into the Secret the
// cloudflared sidecars read, and rolls the proxy Deployment; its Pods
// are replaced one at a time (never fewer than its replicas registered
// at the edge, never more than one Pod beyond them that is not being
// stopped), every connector then runs
// with the new token, the old token opens no new connection, and the
// GatewayClass's condition and events say when. A helm upgrade keeps the
// roll's stamp, and does not rotate again.
func TestTunnelCredentialRotation(t *testing.T) {
	r := startRig(t, "rotate")
	r.dumpPodsOnFailure(t, r.ns)
	kube, edge, ns, proxy := r.kube, r.edge, r.ns, r.proxy()
	const app = "rotate-app"
	r.apply(t, echoSite(app, r.class, 2))
	waitRolledOut(t, kube, ns, proxy, 3*time.Minute)
	visitor := edge.Client(10 * time.Second)
	eventually(t, 60*time.Second, "the route through the edge", func() error {
		if err := connectorsOf(r, proxy, 2); err != nil {
			return err
		}
		return visitAppOnce(visitor)
	})
	secretName := r.class + "-tunnelgate-tunnel-token"
	oldToken := secretKey(t, kube, ns, secretName, "token")
	if got := edge.RegisteredWith(oldToken); len(got) != 2 {
		t.Fatalf("connectors %v registered with the token in Secret %s, want both", got, secretName)
	}
	oldPods := podsOf(t, r, "proxy")

	load := startLoad(visitor, 4, 200_000)
	watch := watchRoll(t, r, r.ns, "app.kubernetes.io/component=proxy", func() int { return len(edge.Connectors()) }, 2)
	began := time.Now()
	patchClassConfig(t, r, fmt.Sprintf(`{"metadata":{"annotations":{%q:"first"}}}`, v1alpha1.AnnotationRotateTunnelCredential))

	var newToken, rotatedAt string
	eventually(t, time.Minute, "the new token written with the rotation's stamp", func() error {
		s, err := kube.CoreV1().Secrets(ns).Get(t.Context(), secretName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		newToken, rotatedAt = string(s.Data["token"]), s.Annotations[v1alpha1.AnnotationRotatedAt]
		if newToken == oldToken || rotatedAt == "" || s.Annotations[v1alpha1.AnnotationRotationTrigger] != "first" {
			return fmt.Errorf("Secret annotations %v, token changed %v", s.Annotations, newToken != oldToken)
		}
		return nil
	})
	eventually(t, time.Minute, "the proxy Deployment stamped", func() error {
		d, err := kube.AppsV1().Deployments(ns).Get(t.Context(), proxy, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations[v1alpha1.AnnotationRotatedAt]; got != rotatedAt {
			return fmt.Errorf("Pod template stamp %q, want %q", got, rotatedAt)
		}
		return nil
	})
	waitRolledOut(t, kube, ns, proxy, 5*time.Minute)
	eventually(t, time.Minute, "every connector registered with the new token", func() error {
		if err := connectorsOf(r, proxy, 2); err != nil {
			return err
		}
		if got := edge.RegisteredWith(newToken); len(got) != 2 {
			return fmt.Errorf("registered with the new token: %v; connectors %v", got, edge.Connectors())
		}
		return nil
	})
	time.Sleep(2 * time.Second) // traffic through the new Pods alone
	total := load.stop()
	fewest, most := watch.stop()
	t.Logf("rotation and roll in %v: %d requests sent, %d failed; at least %d connectors and at most %d proxy Pods not stopping at any time",
		time.Since(began).Round(100*time.Millisecond), total.sent, total.failed, fewest, most)
	if total.failed != 0 || total.sent < 100 {
		t.Errorf("%d of %d requests failed; first failures:\n%s", total.failed, total.sent, strings.Join(load.firstErrors(), "\n"))
	}
	if fewest < 2 || most > 3 {
		t.Errorf("during the roll: as few as %d connectors registered and as many as %d proxy Pods not stopping; want at least 2 and at most 3 (one at a time)", fewest, most)
	}
	for _, p := range podsOf(t, r, "proxy") {
		if slices.ContainsFunc(oldPods, func(o corev1.Pod) bool { return o.UID == p.UID }) {
			t.Errorf("proxy Pod %s was not replaced", p.Name)
		}
	}
	if _, _, err := r.fake.CheckTunnelToken(oldToken); err == nil {
		t.Error("the old token still opens a new connection after the rotation")
	}

	// What the user sees.
	gc, err := r.gw.GatewayV1().GatewayClasses().Get(t.Context(), r.class, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := findCondition(gc.Status.Conditions, translate.ClassConditionCredentialRotated)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "last rotated at "+rotatedAt) {
		t.Errorf("GatewayClass condition %+v, want True saying it was last rotated at %s", c, rotatedAt)
	}
	// This GatewayClass's events alone, by its UID: a class of the same
	// name made by an earlier run left events of its own rotation.
	eventually(t, 30*time.Second, "the rotation's events on the GatewayClass", func() error {
		evs, err := kube.CoreV1().Events(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=GatewayClass,involvedObject.name=" + r.class + ",involvedObject.uid=" + string(gc.UID)})
		if err != nil {
			return err
		}
		var reasons []string
		for _, e := range evs.Items {
			reasons = append(reasons, e.Reason)
			if e.Reason == "TunnelCredentialRotated" && !strings.Contains(e.Message, rotatedAt) {
				return fmt.Errorf("event %q does not say when", e.Message)
			}
		}
		if !slices.Contains(reasons, "TunnelCredentialRotationStarted") || !slices.Contains(reasons, "TunnelCredentialRotated") {
			return fmt.Errorf("events %v", reasons)
		}
		return nil
	})

	// helm upgrade keeps the stamp (a field of another manager, which
	// helm's merge leaves), so the Pods stay, and does not rotate again.
	gen := deploymentGeneration(t, r, proxy)
	if out, err := r.helm(t, append([]string{"upgrade", r.name, chartDir, "--namespace", ns}, r.values()...)...); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	time.Sleep(5 * time.Second) // for a rotation the upgrade would wrongly cause
	d, err := kube.AppsV1().Deployments(ns).Get(t.Context(), proxy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Annotations[v1alpha1.AnnotationRotatedAt]; got != rotatedAt || d.Generation != gen {
		t.Errorf("after helm upgrade: stamp %q (want %q), generation %d (was %d)", got, rotatedAt, d.Generation, gen)
	}
	if tok := secretKey(t, kube, ns, secretName, "token"); tok != newToken {
		t.Error("helm upgrade brought another rotation, or an old token back")
	}
}

// patchClassConfig merge-patches the rig's GatewayClassConfig.
func patchClassConfig(t *testing.T, r *rig, patch string) {
	if _, err := r.env.Dynamic().Resource(gvrClassConfig).Patch(t.Context(), r.class, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deploymentGeneration(t *testing.T, r *rig, name string) int64 {
	d, err := r.kube.AppsV1().Deployments(r.ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Generation
}

func findCondition(list []metav1.Condition, typ string) *metav1.Condition {
	for i := range list {
		if list[i].Type == typ {
			return &list[i]
		}
	}
	return nil
}

// rollWatch samples, every 100 ms, the connectors registered at the edge
// (connectors counts them) and the Pods of ns that selector picks and
// that are not stopping, for the fewest and the most seen.
type rollWatch struct {
	done         chan struct{}
	wg           sync.WaitGroup
	fewest, most int
}

func watchRoll(t *testing.T, r *rig, ns, selector string, connectors func() int, replicas int) *rollWatch {
	w := &rollWatch{done: make(chan struct{}), fewest: replicas, most: replicas}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			w.fewest = min(w.fewest, connectors())
			pods, err := r.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
			if err == nil {
				// Those not stopping: a Pod being stopped is its
				// replacement's predecessor, which a rollout no longer
				// counts (maxSurge is of the others).
				live := 0
				for _, p := range pods.Items {
					if p.DeletionTimestamp == nil {
						live++
					}
				}
				w.most = max(w.most, live)
			}
		}
	}()
	return w
}

func (w *rollWatch) stop() (fewest, most int) {
	close(w.done)
	w.wg.Wait()
	return w.fewest, w.most
}

// A Gateway's own tunnel rotates the same way, asked on its GatewayConfig:
// the new token goes to the plane's tunnel token Secret, the controller
// renders the rotation's time on the plane's Pod template, and the
// plane's two Pods are replaced one at a time with no request lost
// through its tunnel; the Gateway's condition and events say when.
func TestPlaneTunnelCredentialRotation(t *testing.T) {
	r := startRig(t, "rotplane")
	r.edge.RouteByDNS(r.fake)
	const ns = "team-r"
	r.dumpPodsOnFailure(t, ns)
	r.apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: own, namespace: %[1]s}
spec:
  dataPlane: Dedicated
  replicas: 2
  tunnel: {name: team-r-tunnel, credentialRotation: {interval: 720h}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: %[1]s}
spec:
  gatewayClassName: %[2]s
  infrastructure:
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: own}
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "r.example.com"}]
`+backend(ns), ns, r.class))
	plane := provision.Name("gw", r.class)
	eventually(t, 2*time.Minute, "the plane's Deployment", func() error {
		_, err := r.kube.AppsV1().Deployments(ns).Get(t.Context(), plane, metav1.GetOptions{})
		return err
	})
	waitRolledOut(t, r.kube, ns, plane, 3*time.Minute)
	tunnel := tunnelID(t, r, "team-r-tunnel")
	visitor := r.edge.Client(10 * time.Second)
	eventually(t, 90*time.Second, "the Gateway served through its own tunnel by its two Pods", func() error {
		if got := r.edge.ConnectorsOf(tunnel); len(got) != 2 {
			return fmt.Errorf("connectors of the tunnel: %v", got)
		}
		return visitBackend(visitor, "r.example.com", ns)
	})
	secretName := plane + "-tunnel"
	oldToken := secretKey(t, r.kube, ns, secretName, "token")
	eventually(t, 30*time.Second, "the Gateway saying the schedule", func() error {
		return r.conditionSays(t.Context(), ns, "gw", translate.ClassConditionCredentialRotated, metav1.ConditionFalse,
			translate.RotationReasonNotYet, "next rotation due at")
	})
	selector := provision.LabelGatewayName + "=gw"
	oldPods, err := r.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}

	load := startLoadOf(4, 200_000, func(int) error { return visitBackend(visitor, "r.example.com", ns) })
	watch := watchRoll(t, r, ns, selector, func() int { return len(r.edge.ConnectorsOf(tunnel)) }, 2)
	if _, err := r.env.Dynamic().Resource(v1alpha1.SchemeGroupVersion.WithResource("gatewayconfigs")).Namespace(ns).Patch(t.Context(), "own",
		types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"now"}}}`, v1alpha1.AnnotationRotateTunnelCredential), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var newToken, rotatedAt string
	eventually(t, time.Minute, "the new token written with the rotation's stamp", func() error {
		s, err := r.kube.CoreV1().Secrets(ns).Get(t.Context(), secretName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		newToken, rotatedAt = string(s.Data["token"]), s.Annotations[v1alpha1.AnnotationRotatedAt]
		if newToken == oldToken || rotatedAt == "" || s.Annotations[v1alpha1.AnnotationRotationTrigger] != "now" {
			return fmt.Errorf("Secret annotations %v, token changed %v", s.Annotations, newToken != oldToken)
		}
		return nil
	})
	eventually(t, time.Minute, "the plane's Pod template stamped", func() error {
		d, err := r.kube.AppsV1().Deployments(ns).Get(t.Context(), plane, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations[v1alpha1.AnnotationRotatedAt]; got != rotatedAt {
			return fmt.Errorf("Pod template stamp %q, want %q", got, rotatedAt)
		}
		return nil
	})
	waitRolledOut(t, r.kube, ns, plane, 5*time.Minute)
	eventually(t, time.Minute, "the tunnel's connectors all registered with the new token", func() error {
		got, fresh := r.edge.ConnectorsOf(tunnel), r.edge.RegisteredWith(newToken)
		if len(got) != 2 || len(fresh) != 2 {
			return fmt.Errorf("connectors %v, of which with the new token %v", got, fresh)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	total := load.stop()
	fewest, most := watch.stop()
	t.Logf("plane rotation: %d requests sent, %d failed; at least %d connectors and at most %d plane Pods not stopping at any time",
		total.sent, total.failed, fewest, most)
	if total.failed != 0 || total.sent < 100 {
		t.Errorf("%d of %d requests failed; first failures:\n%s", total.failed, total.sent, strings.Join(load.firstErrors(), "\n"))
	}
	if fewest < 2 || most > 3 {
		t.Errorf("during the roll: as few as %d connectors and as many as %d plane Pods not stopping; want at least 2 and at most 3", fewest, most)
	}
	pods, err := r.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if slices.ContainsFunc(oldPods.Items, func(o corev1.Pod) bool { return o.UID == p.UID }) {
			t.Errorf("plane Pod %s was not replaced", p.Name)
		}
	}
	if _, _, err := r.fake.CheckTunnelToken(oldToken); err == nil {
		t.Error("the old token still opens a new connection after the rotation")
	}
	eventually(t, 30*time.Second, "the Gateway saying when", func() error {
		return r.conditionSays(t.Context(), ns, "gw", translate.ClassConditionCredentialRotated, metav1.ConditionTrue,
			translate.RotationReasonRotated, "last rotated at "+rotatedAt)
	})
	evs, err := r.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Gateway,involvedObject.name=gw,reason=TunnelCredentialRotated"})
	if err != nil || len(evs.Items) == 0 || !strings.Contains(evs.Items[0].Message, plane) {
		t.Errorf("TunnelCredentialRotated events on the Gateway: %v (%v); want one naming Deployment %s", evs, err, plane)
	}
}
