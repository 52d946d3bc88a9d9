package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
)

// The whole path from a Deployment to a request: kube-controller-manager
// makes Pods of the Deployment, the kubelet stand-in runs them in network
// namespaces of their own, the EndpointSlice controller publishes their
// addresses, the controller turns them into the proxy's clusters, and the
// proxy reaches every Pod. A rolling update and a scale-down under load
// lose no request: the old Pods keep serving (DRAIN, as a preStop sleep
// would) while their endpoints' removal travels to the proxy.
func TestDeploymentsReachTheProxy(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	k, err := kubelet.Start(ctx, env.Config, kubelet.Options{Log: testLog(0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	ns := env.Namespace(t)
	// Names of this run's own, so that -count=2 does not meet the first
	// run's objects (whose Pods the next Kubelet runs again).
	controllerName := "tunnelgate.dev/test-" + ns
	objects := func(version string, replicas int) []byte {
		return fmt.Appendf([]byte(fixture.ClassYAML(ns, controllerName, "")+"---\n"+fixture.GatewayYAML(ns, "gw", ns, fixture.HTTP80)), `---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: %[1]s}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %[1]s}
spec:
  replicas: %[4]d
  selector: {matchLabels: {app: web}}
  strategy: {rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}
  template:
    metadata: {labels: {app: web, version: %[3]s}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: web
        image: %[2]s
        ports: [{name: http, containerPort: 8080}]
        env: [{name: DRAIN, value: 1500ms}, {name: VERSION, value: %[3]s}]
        readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 1}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [web.example.com]
  rules: [{backendRefs: [{name: web, port: 80}]}]
`, ns, kubelet.EchoImage, version, replicas)
	}
	if err := env.Apply(ctx, objects("v1", 3)); err != nil {
		t.Fatal(err)
	}
	r := startController(t, cl, controllerName, nil, "")
	p, proxyURL := startProxy(t, r)

	// podsOf lists the Deployment's ready Pods of a version, by name.
	podsOf := func(version string) (map[string]bool, string) {
		l, err := cl.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web,version=" + version})
		if err != nil {
			return nil, err.Error()
		}
		out := map[string]bool{}
		for _, pod := range l.Items {
			if pod.DeletionTimestamp == nil && podReady(&pod) {
				out[pod.Name] = true
			}
		}
		return out, fmt.Sprintf("%d pods, %d ready", len(l.Items), len(out))
	}
	// answering sends requests until every Pod in want has answered and
	// no other has.
	answering := func(want map[string]bool) (bool, string) {
		seen := map[string]bool{}
		for range 10 * len(want) {
			pod, err := whoAnswers(proxyURL)
			if err != nil {
				return false, err.Error()
			}
			if !want[pod] {
				return false, pod + " answered, not one of " + keys(want)
			}
			seen[pod] = true
		}
		return len(seen) == len(want), "answered: " + keys(seen) + "; want " + keys(want)
	}
	// clusterAddrs lists the endpoints of the proxy's cluster for web.
	clusterAddrs := func() []string {
		var out []string
		cfg := p.Config()
		if cfg == nil {
			return nil
		}
		for _, c := range cfg.Clusters {
			if strings.Contains(c.Name, ns+"/web") {
				for _, e := range c.Endpoints {
					out = append(out, e.Address)
				}
			}
		}
		slices.Sort(out)
		return out
	}

	var v1 map[string]bool
	eventually(t, 60*time.Second, "three v1 Pods ready and all answering through the proxy", func() (bool, string) {
		var why string
		if v1, why = podsOf("v1"); len(v1) != 3 {
			return false, why
		}
		return answering(v1)
	})
	// The proxy's cluster holds exactly the Pods' addresses.
	pods, err := cl.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, pod := range pods.Items {
		want = append(want, pod.Status.PodIP+":8080")
	}
	slices.Sort(want)
	if got := clusterAddrs(); !slices.Equal(got, want) {
		t.Errorf("proxy cluster endpoints %v, want the pods' %v", got, want)
	}

	load := startLoad(proxyURL, "web.example.com", "", 2, 200_000)
	t.Cleanup(load.stop)

	// A rolling update: v2 Pods come, v1 Pods go, no request fails.
	if err := env.Apply(ctx, objects("v2", 3)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the rollout to v2, with only v2 answering", func() (bool, string) {
		if old, why := podsOf("v1"); len(old) != 0 {
			return false, "v1: " + why
		}
		v2, why := podsOf("v2")
		if len(v2) != 3 {
			return false, "v2: " + why
		}
		return answering(v2)
	})
	// A scale-down: two Pods go, no request fails.
	if err := env.Apply(ctx, objects("v2", 1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "one Pod left, answering alone", func() (bool, string) {
		l, err := cl.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(l.Items) != 1 {
			return false, fmt.Sprintf("%v, %d pods", err, len(l.Items))
		}
		return answering(map[string]bool{l.Items[0].Name: true})
	})
	load.stop()
	sent, failed := load.sent.Load(), load.failed.Load()
	t.Logf("%d requests through a rolling update and a scale-down", sent)
	if failed > 0 {
		t.Errorf("%d of %d requests failed, last: %v", failed, sent, load.lastFailure.Load())
	}
	if sent < 100 {
		t.Errorf("only %d requests under load", sent)
	}
}

// whoAnswers asks the proxy which Pod serves web.example.com.
func whoAnswers(proxyURL string) (string, error) {
	code, body, _, err := get(proxyURL, "web.example.com", "/who")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", code, body)
	}
	var echo kubelet.EchoResponse
	if err := json.Unmarshal([]byte(body), &echo); err != nil {
		return "", fmt.Errorf("%v: %q", err, body)
	}
	return echo.Pod, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
