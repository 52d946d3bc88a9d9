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
	watch := watchRoll(t, r, 2)
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
	eventually(t, 30*time.Second, "the rotation's events on the GatewayClass", func() error {
		evs, err := kube.CoreV1().Events(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=GatewayClass,involvedObject.name=" + r.class})
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
	t.Helper()
	if _, err := r.env.Dynamic().Resource(gvrClassConfig).Patch(t.Context(), r.class, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deploymentGeneration(t *testing.T, r *rig, name string) int64 {
	t.Helper()
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
// and the proxy Pods not stopping, for the fewest and the most seen.
type rollWatch struct {
	done         chan struct{}
	wg           sync.WaitGroup
	fewest, most int
}

func watchRoll(t *testing.T, r *rig, replicas int) *rollWatch {
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
			w.fewest = min(w.fewest, len(r.edge.Connectors()))
			pods, err := r.kube.CoreV1().Pods(r.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=proxy"})
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
