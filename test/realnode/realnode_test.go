package realnode_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/realnode"
)

// One control plane and one node for the package's tests, in a network
// namespace of the test binary's own.
var shared = realnode.NewShared(kubeenv.Options{}, realnode.Options{})

func TestMain(m *testing.M) { shared.Main(m) }

// theNode starts the package's node on first use.
func theNode(t *testing.T) (*kubeenv.Env, *realnode.Node) {
	t.Helper()
	return shared.Node(t)
}

func TestNodeReady(t *testing.T) {
	_, n := theNode(t)
	got, err := n.Client.CoreV1().Nodes().Get(t.Context(), realnode.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		t.Errorf("node %s is not Ready: %+v", got.Name, got.Status.Conditions)
	}
	if v := got.Status.NodeInfo.KubeletVersion; v != kubeenv.KubernetesVersion {
		t.Errorf("kubelet version %s, want %s", v, kubeenv.KubernetesVersion)
	}
	if v := got.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(v, "containerd://"+realnode.ContainerdVersion) {
		t.Errorf("container runtime %s, want containerd %s", v, realnode.ContainerdVersion)
	}
}

// imageOnce builds the project's image and imports it, once.
var (
	imageOnce sync.Once
	imageErr  error
)

func importTunnelgate(t *testing.T, n *realnode.Node) {
	t.Helper()
	imageOnce.Do(func() {
		began := time.Now()
		imageErr = n.ImportTunnelgateImage(context.Background())
		t.Logf("the tunnelgate image built and imported in %v", time.Since(began).Round(100*time.Millisecond))
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
}

// waitPod waits up to two minutes for cond on the Pod, failing with the
// namespace's Pods and events and the node's logs.
func waitPod(t *testing.T, n *realnode.Node, ns, name string, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		p, err := n.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && cond(p) {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s/%s: waiting for %s: %v (last error %v)\n%s\n%s", ns, name, what, ctx.Err(), err,
				n.DescribePods(ctx, ns), n.Logs(30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// podLog reads a container's log through the API server (which asks the
// kubelet).
func podLog(t *testing.T, n *realnode.Node, ns, pod, container string) string {
	t.Helper()
	b, err := n.Client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("log of %s/%s %s: %v", ns, pod, container, err)
	}
	return string(b)
}

// standalone is tunnelgate standalone serving a redirect for
// www.example.com, hardened as the chart's Pods are, behind Service web.
const standalone = `
apiVersion: v1
kind: ConfigMap
metadata: {name: gateway}
data:
  gateway.yaml: |
    apiVersion: gateway.networking.k8s.io/v1
    kind: GatewayClass
    metadata: {name: tunnelgate}
    spec: {controllerName: tunnelgate.dev/controller}
    ---
    apiVersion: gateway.networking.k8s.io/v1
    kind: Gateway
    metadata: {name: demo, namespace: default}
    spec:
      gatewayClassName: tunnelgate
      listeners: [{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}]
    ---
    apiVersion: gateway.networking.k8s.io/v1
    kind: HTTPRoute
    metadata: {name: moved, namespace: default}
    spec:
      parentRefs: [{name: demo}]
      hostnames: [www.example.com]
      rules:
      - filters:
        - type: RequestRedirect
          requestRedirect: {hostname: moved.example.com, statusCode: 302}
---
apiVersion: v1
kind: Pod
metadata: {name: standalone, labels: {app: standalone}}
spec:
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  initContainers:
  - name: version
    image: ` + realnode.TunnelgateImage + `
    args: [version]
    securityContext: &restricted
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
  containers:
  - name: tunnelgate
    image: ` + realnode.TunnelgateImage + `
    args: [standalone, -f, /config, -listen, "0.0.0.0:8080", -admin, "0.0.0.0:9090"]
    ports: [{containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /readyz, port: 9090}
      periodSeconds: 1
    securityContext: *restricted
    volumeMounts: [{name: config, mountPath: /config}]
  volumes:
  - name: config
    configMap: {name: gateway}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: standalone}
  ports: [{port: 80, targetPort: 8080}]
`

// startStandalone runs the standalone Pod and Service in a new namespace
// and returns the namespace and the Ready Pod.
func startStandalone(t *testing.T) (*kubeenv.Env, *realnode.Node, string, *corev1.Pod) {
	env, n := theNode(t)
	importTunnelgate(t, n)
	ns := env.Namespace(t)
	if err := env.Apply(t.Context(), []byte(strings.ReplaceAll(standalone, "\nmetadata: {name: ", "\nmetadata: {namespace: "+ns+", name: "))); err != nil {
		t.Fatal(err)
	}
	pod := waitPod(t, n, ns, "standalone", "Ready", realnode.PodReady)
	return env, n, ns, pod
}

// TestRestrictedPod runs the project's image with the chart's security
// settings and checks, in the container's process as the kernel sees it,
// that containerd and runc applied them, and that the image's binary runs.
func TestRestrictedPod(t *testing.T) {
	_, n, ns, pod := startStandalone(t)
	if pod.Spec.NodeName != realnode.NodeName {
		t.Errorf("the Pod was not scheduled to %s: nodeName %q", realnode.NodeName, pod.Spec.NodeName)
	}
	if log := podLog(t, n, ns, "standalone", "version"); !strings.Contains(log, realnode.TunnelgateVersion) {
		t.Errorf("tunnelgate version printed %q, want the version built in (%s)", log, realnode.TunnelgateVersion)
	}
	var id string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == "tunnelgate" {
			id = cs.ContainerID
		}
	}
	pid, err := n.ContainerPID(id)
	if err != nil {
		t.Fatal(err)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.HasPrefix(string(cmdline), "/tunnelgate\x00standalone\x00") {
		t.Fatalf("process %d of the container runs %q, not /tunnelgate standalone", pid, cmdline)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	for k, want := range map[string]string{
		"Uid":        "65532 65532 65532 65532", // runAsUser
		"Gid":        "65532 65532 65532 65532", // runAsGroup
		"CapInh":     "0000000000000000",        // capabilities: drop ALL
		"CapPrm":     "0000000000000000",
		"CapEff":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"CapAmb":     "0000000000000000",
		"NoNewPrivs": "1", // allowPrivilegeEscalation: false
		"Seccomp":    "2", // a filter: RuntimeDefault
	} {
		if fields[k] != want {
			t.Errorf("/proc/%d/status %s: %q, want %q", pid, k, fields[k], want)
		}
	}
	// readOnlyRootFilesystem: the container's root is mounted read-only,
	// which holds even for root writing through /proc/PID/root.
	err = os.WriteFile(fmt.Sprintf("/proc/%d/root/written", pid), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing to the container's root: %v, want %v", err, syscall.EROFS)
	}
	// The volume it was given is there.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/config/gateway.yaml", pid)); err != nil {
		t.Errorf("the ConfigMap volume: %v", err)
	}
}

// TestServiceClusterIP reaches the standalone Pod at its Service's
// ClusterIP, which only kube-proxy's rules make answer: the Service CIDR
// is routed nowhere else.
func TestServiceClusterIP(t *testing.T) {
	_, n, ns, pod := startStandalone(t)
	svc, err := n.Client.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// kube-proxy's rules for the Service, and its endpoint.
	deadline := time.Now().Add(time.Minute)
	for {
		rules, err := n.IptablesSave(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(rules, ns+"/web cluster IP") && strings.Contains(rules, "--to-destination "+pod.Status.PodIP+":8080") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kube-proxy rules for %s/web (ClusterIP %s, endpoint %s:8080) after a minute:\n%s\n%s", ns, svc.Spec.ClusterIP, pod.Status.PodIP, rules, n.Logs(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// From the node (the test process), through the OUTPUT chain.
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+svc.Spec.ClusterIP+"/path", nil)
	req.Host = "www.example.com"
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s at ClusterIP %s: %v\n%s", req.Host, svc.Spec.ClusterIP, err, n.Logs(30))
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://moved.example.com/path" {
		t.Errorf("from the node: %s, Location %q; want 302 to http://moved.example.com/path from tunnelgate", resp.Status, resp.Header.Get("Location"))
	}
	// From a Pod, through PREROUTING, by the Service's name.
	out := runProbe(t, n, ns, "get-by-ip", "get", "-host", "www.example.com", "http://"+svc.Spec.ClusterIP+"/from-pod")
	if !strings.Contains(out, "302 Found") || !strings.Contains(out, "Location: http://moved.example.com/from-pod") {
		t.Errorf("from a Pod: %q; want 302 to http://moved.example.com/from-pod", out)
	}
}

// TestDNS resolves a Service's names in a Pod, through CoreDNS at the
// kube-dns ClusterIP (the nameserver the kubelet writes into the Pod's
// resolv.conf, with the namespace's search path), and gets an answer
// through the name.
func TestDNS(t *testing.T) {
	_, n, ns, _ := startStandalone(t)
	svc, err := n.Client.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full := "web." + ns + ".svc.cluster.local"
	out := runProbe(t, n, ns, "resolve", "resolve", full, "web", "web."+ns)
	for _, name := range []string{full, "web", "web." + ns} {
		if !strings.Contains(out, name+" "+svc.Spec.ClusterIP+"\n") {
			t.Errorf("%s did not resolve to the Service's ClusterIP %s: %q", name, svc.Spec.ClusterIP, out)
		}
	}
	out = runProbe(t, n, ns, "get-by-name", "get", "-host", "www.example.com", "http://"+full+"/by-name")
	if !strings.Contains(out, "302 Found") || !strings.Contains(out, "Location: http://moved.example.com/by-name") {
		t.Errorf("GET by name: %q; want 302 to http://moved.example.com/by-name", out)
	}
}

// runProbe runs the probe with args in a Pod that runs once, waits for it
// to succeed and returns its output.
func runProbe(t *testing.T, n *realnode.Node, ns, name string, args ...string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: realnode.ProbeImage, ImagePullPolicy: corev1.PullNever,
				Args: args,
			}},
		},
	}
	if _, err := n.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := waitPod(t, n, ns, name, "the probe to finish", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	log := podLog(t, n, ns, name, "probe")
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("probe %v failed; its output:\n%s", args, log)
	}
	return log
}

// TestSidecarStopsLast deletes a Pod with a native sidecar and checks the
// kubelet stopped the main container before it sent the sidecar SIGTERM.
func TestSidecarStopsLast(t *testing.T) {
	env, n := theNode(t)
	ns := env.Namespace(t)
	out := filepath.Join(n.Dir, "sidecar-"+ns)
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil { // the umask took some
		t.Fatal(err)
	}
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar", Namespace: ns},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{
				Name: "sidecar", Image: realnode.ProbeImage, ImagePullPolicy: corev1.PullNever, RestartPolicy: &always,
				Args:         []string{"pause", "-log", "/out/log", "-name", "sidecar"},
				VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}},
			}},
			Containers: []corev1.Container{{
				Name: "main", Image: realnode.ProbeImage, ImagePullPolicy: corev1.PullNever,
				// Two seconds between SIGTERM and exit: a sidecar stopped at
				// the same time as the main container would say so in between.
				Args:         []string{"pause", "-log", "/out/log", "-name", "main", "-linger", "2s"},
				VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}},
			}},
			Volumes: []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: out},
			}}},
		},
	}
	if _, err := n.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, n, ns, "sidecar", "Ready", realnode.PodReady)
	if err := n.Client.CoreV1().Pods(ns).Delete(t.Context(), "sidecar", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		_, err := n.Client.CoreV1().Pods(ns).Get(ctx, "sidecar", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the Pod was not removed within a minute of its deletion\n%s\n%s", n.DescribePods(ctx, ns), n.Logs(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, err := os.ReadFile(filepath.Join(out, "log"))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	var last int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var who, what string
		var at int64
		if _, err := fmt.Sscanf(line, "%s %s %d", &who, &what, &at); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if at < last {
			t.Errorf("log lines out of time order: %q", b)
		}
		last = at
		order = append(order, who+" "+what)
	}
	want := []string{"main term", "main exit", "sidecar term", "sidecar exit"}
	if strings.Join(order, ", ") != strings.Join(want, ", ") {
		t.Errorf("stop order %q, want %q", order, want)
	}
}
