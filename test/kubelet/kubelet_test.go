package kubelet_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

var shared = kubeenv.NewShared(kubeenv.Options{ControllerManager: true, NoCRDs: true})

// crashImage exits at once with status 3, to see restarts.
const crashImage = "tunnelgate.test/crash"

func TestMain(m *testing.M) {
	kubelet.Register(crashImage, func([]string) int { return 3 })
	kubelet.Register(filesImage, filesMain)
	kubelet.Register(talkImage, talkMain)
	kubelet.Register(orderImage, orderMain)
	kubelet.Register(netImage, netMain)
	kubelet.Register(apiImage, apiMain)
	kubelet.RunIfContainer()
	netns.Run(func() int { shared.Main(m); return 0 })
}

func start(t *testing.T) (*kubeenv.Env, kubernetes.Interface) {
	t.Helper()
	return startWith(t, kubelet.Options{})
}

// startWith starts a Kubelet with opts (logging to the test's log) on the
// shared control plane.
func startWith(t *testing.T, opts kubelet.Options) (*kubeenv.Env, kubernetes.Interface) {
	t.Helper()
	env := shared.Env(t)
	opts.Log = testLog()
	k, err := kubelet.Start(t.Context(), env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return env, kube
}

// A Deployment's Pods run, get addresses on the bridge and become Ready,
// the EndpointSlice controller publishes them, and each answers as
// itself; a deleted Pod's process stops and its replacement takes over.
func TestDeploymentToEndpoints(t *testing.T) {
	env, kube := start(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	err := env.Apply(ctx, fmt.Appendf(nil, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo, namespace: %[1]s}
spec:
  replicas: 2
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: echo
        image: %[2]s:v1
        ports: [{containerPort: 8080}]
        env: [{name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: %[1]s}
spec:
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
`, ns, kubelet.EchoImage))
	if err != nil {
		t.Fatal(err)
	}

	endpoints := waitEndpoints(t, kube, ns, "echo", 2)
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s: node %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
	for addr := range endpoints {
		echo := call(t, addr)
		if !slices.Contains(names, echo.Pod) || echo.Namespace != ns || echo.Path != "/x?y=1" {
			t.Errorf("%s answered %+v; pods %v", addr, echo, names)
		}
		if endpoints[addr] != echo.Pod {
			t.Errorf("%s is %s in the EndpointSlice but answered as %s", addr, endpoints[addr], echo.Pod)
		}
	}

	// Delete one Pod: its process stops, the ReplicaSet replaces it.
	var gone string
	for addr, pod := range endpoints {
		gone = addr
		if err := kube.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		break
	}
	eventually(t, "the deleted pod's address to stop answering and be replaced", func() (bool, string) {
		now := endpointsOf(t, kube, ns, "echo")
		if _, ok := now[gone]; ok || len(now) != 2 {
			return false, fmt.Sprintf("endpoints %v; pods %s", now, podsOf(t, kube, ns))
		}
		// No answer: refused, unreachable, or silence.
		if _, err := (&http.Client{Timeout: 500 * time.Millisecond}).Get("http://" + gone + "/"); err == nil {
			return false, gone + " still answers"
		}
		return true, ""
	})
	for addr := range endpointsOf(t, kube, ns, "echo") {
		call(t, addr)
	}

	// Scale to zero: the Pod objects go once their processes stopped.
	if _, err := kube.AppsV1().Deployments(ns).Patch(ctx, "echo", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no pods after scaling to zero", func() (bool, string) {
		l, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d pods", len(l.Items))
	})
}

// A container that exits is restarted with a back-off and counted, its
// exit code reported (through the hosts wrapper, which execs); one whose
// image maps to nothing waits as ErrImagePull.
func TestRestartsAndUnknownImages(t *testing.T) {
	env, kube := start(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	err := env.Apply(ctx, fmt.Appendf(nil, `
apiVersion: v1
kind: Pod
metadata: {name: crash, namespace: %[1]s}
spec:
  containers: [{name: c, image: %[2]s}]
---
apiVersion: v1
kind: Pod
metadata: {name: once, namespace: %[1]s}
spec:
  restartPolicy: Never
  containers: [{name: c, image: %[2]s}]
---
apiVersion: v1
kind: Pod
metadata: {name: unknown, namespace: %[1]s}
spec:
  containers: [{name: c, image: example.invalid/nothing:1}]
`, ns, crashImage))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the crashing container restarted twice", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "crash", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%v %+v", err, p.Status)
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 2 && !cs.Ready, fmt.Sprintf("%+v", cs)
	})
	eventually(t, "the container that may not restart Failed with its exit code", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%v %+v", err, p.Status)
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return p.Status.Phase == corev1.PodFailed && term != nil && term.ExitCode == 3, fmt.Sprintf("%s %+v", p.Status.Phase, term)
	})
	eventually(t, "the unknown image waiting as ErrImagePull", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "unknown", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%v %+v", err, p.Status)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImagePull", fmt.Sprintf("%+v", p.Status.ContainerStatuses[0].State)
	})
}

// waitEndpoints waits for n ready endpoints of a Service and returns them.
func waitEndpoints(t *testing.T, kube kubernetes.Interface, ns, svc string, n int) map[string]string {
	t.Helper()
	var got map[string]string
	eventually(t, fmt.Sprintf("%d ready endpoints for %s", n, svc), func() (bool, string) {
		got = endpointsOf(t, kube, ns, svc)
		return len(got) == n, fmt.Sprintf("%v", got)
	})
	return got
}

// endpointsOf maps the ready endpoints' address:port to their Pod's name.
func endpointsOf(t *testing.T, kube kubernetes.Interface, ns, svc string) map[string]string {
	t.Helper()
	l, err := kube.DiscoveryV1().EndpointSlices(ns).List(t.Context(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || !*e.Conditions.Ready || e.TargetRef == nil || len(s.Ports) == 0 {
				continue
			}
			for _, a := range e.Addresses {
				out[fmt.Sprintf("%s:%d", a, *s.Ports[0].Port)] = e.TargetRef.Name
			}
		}
	}
	return out
}

func call(t *testing.T, addr string) kubelet.EchoResponse {
	t.Helper()
	res, err := http.Get("http://" + addr + "/x?y=1")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var echo kubelet.EchoResponse
	if err := json.NewDecoder(res.Body).Decode(&echo); err != nil {
		t.Fatal(err)
	}
	return echo
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	for {
		ok, why := cond()
		if ok {
			t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 60s: %s", what, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// testLog shows the Kubelet's messages when $TUNNELGATE_TEST_LOG is set.
func testLog() *slog.Logger {
	if os.Getenv("TUNNELGATE_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// podsOf describes the Pods of ns, for failure messages.
func podsOf(t *testing.T, kube kubernetes.Interface, ns string) string {
	l, err := kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range l.Items {
		ready := "not ready"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = "ready"
			}
		}
		out = append(out, fmt.Sprintf("%s (node %q, %s, %s, ip %s, deleting %v)", p.Name, p.Spec.NodeName, p.Status.Phase, ready, p.Status.PodIP, p.DeletionTimestamp != nil))
	}
	return strings.Join(out, "; ")
}
