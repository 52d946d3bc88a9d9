package kubelet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
)

// netImage is a Pod's view of the network and its environment, served
// on :8080:
//
//	GET /get?url=U      the body of GET U from inside the Pod (a new
//	                    connection each time), or 502 and the error
//	GET /env/NAME       $NAME
//	GET /hostpath?p=P   kubelet.HostPath(P)
//	GET /file?p=P       the contents of the file at P (no HostPath)
//	GET /pid            its process ID
//
// With the argument -listen=unix:PATH it serves the same on that Unix
// socket too.
const netImage = "tunnelgate.test/net"

func netMain(args []string) int {
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		res, err := hc.Get(r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	})
	mux.HandleFunc("GET /env/{name}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, os.Getenv(r.PathValue("name")))
	})
	mux.HandleFunc("GET /hostpath", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, kubelet.HostPath(r.URL.Query().Get("p")))
	})
	mux.HandleFunc("GET /file", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(r.URL.Query().Get("p"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(b)
	})
	mux.HandleFunc("GET /pid", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, os.Getpid())
	})
	for _, a := range args {
		if sock, ok := strings.CutPrefix(a, "-listen=unix:"); ok {
			ln, err := net.Listen("unix", sock)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			go http.Serve(ln, mux)
		}
	}
	ln, err := net.Listen("tcp", ":8080")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, http.Serve(ln, mux))
	return 1
}

// A Pod reaches another Deployment's Pods through a Service by its DNS
// names, through the Kubelet's /etc/hosts and Service proxy; the name
// still works once the backend Pod is replaced, and with two replicas
// connections go to both.
func TestServiceByName(t *testing.T) {
	env, kube := start(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	err := env.Apply(ctx, fmt.Appendf(nil, `
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
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: echo
        image: %[2]s
        ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: %[1]s}
spec:
  containers:
  - name: c
    image: %[3]s
    ports: [{containerPort: 8080}]
`, ns, kubelet.EchoImage, netImage))
	if err != nil {
		t.Fatal(err)
	}
	client := podIP(t, kube, ns, "client")
	first := waitEndpoints(t, kube, ns, "web", 1)
	var firstPod string
	for _, pod := range first {
		firstPod = pod
	}

	for _, name := range []string{"web." + ns + ".svc", "web." + ns + ".svc.cluster.local", "web." + ns, "web"} {
		echo, err := getVia(client, "http://"+name+"/by-name")
		if err != nil {
			t.Fatalf("%s from the client Pod: %v", name, err)
		}
		if echo.Pod != firstPod || echo.Host != name || echo.Path != "/by-name" {
			t.Errorf("%s answered %+v; want pod %s", name, echo, firstPod)
		}
	}

	// The backend Pod replaced: the same name reaches its successor.
	if err := kube.CoreV1().Pods(ns).Delete(ctx, firstPod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	svcName := "web." + ns + ".svc"
	eventually(t, "the Service name answering from the replacement Pod", func() (bool, string) {
		echo, err := getVia(client, "http://"+svcName+"/")
		if err != nil {
			return false, err.Error()
		}
		return echo.Pod != firstPod, "answered by " + echo.Pod
	})

	// Two replicas: connections go to both, in turn.
	if _, err := kube.AppsV1().Deployments(ns).Patch(ctx, "web", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, kube, ns, "web", 2)
	seen := map[string]bool{}
	eventually(t, "both replicas answering through the Service", func() (bool, string) {
		echo, err := getVia(client, "http://"+svcName+"/")
		if err != nil {
			return false, err.Error()
		}
		seen[echo.Pod] = true
		return len(seen) == 2, fmt.Sprintf("answered by %v", seen)
	})
}

// getVia has the netImage Pod at ip GET u and decodes the EchoResponse.
func getVia(ip, u string) (kubelet.EchoResponse, error) {
	var echo kubelet.EchoResponse
	hc := &http.Client{Timeout: 5 * time.Second}
	res, err := hc.Get("http://" + net.JoinHostPort(ip, "8080") + "/get?url=" + url.QueryEscape(u))
	if err != nil {
		return echo, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return echo, fmt.Errorf("%s: %s", res.Status, b)
	}
	return echo, json.Unmarshal(b, &echo)
}

// podIP waits for a Pod to be Ready and returns its address.
func podIP(t *testing.T, kube kubernetes.Interface, ns, name string) string {
	t.Helper()
	var ip string
	eventually(t, "pod "+name+" Ready", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ip = p.Status.PodIP
		return podReady(p), fmt.Sprintf("%+v", p.Status)
	})
	return ip
}

// apiImage is an in-cluster client: it loads its configuration as
// client-go's default loading does ($KUBECONFIG, or else the in-cluster
// config), says who it is to the API server, GETs its own Pod and tries
// to list the Secrets of its namespace, a line each on stdout; it exits 0
// when it is the ServiceAccount $WANT_USER, reached the API server at
// $KUBERNETES_SERVICE_HOST, read its Pod and was refused the Secrets.
const apiImage = "tunnelgate.test/api"

func apiMain([]string) int {
	fail := func(format string, a ...any) int {
		fmt.Printf("FAIL "+format+"\n", a...)
		return 1
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return fail("config: %v", err)
	}
	want := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	if cfg.Host != want {
		return fail("server %s, want %s (from KUBERNETES_SERVICE_HOST and _PORT)", cfg.Host, want)
	}
	// The namespace file of the ServiceAccount volume, through HostPath.
	ns, err := os.ReadFile(kubelet.HostPath("/var/run/secrets/kubernetes.io/serviceaccount/namespace"))
	if err != nil {
		return fail("namespace: %v", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail("client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fail("self subject review: %v", err)
	}
	user := review.Status.UserInfo.Username
	fmt.Println("user", user)
	if user != os.Getenv("WANT_USER") {
		return fail("user %s, want %s", user, os.Getenv("WANT_USER"))
	}
	pod, err := kube.CoreV1().Pods(string(ns)).Get(ctx, os.Getenv("HOSTNAME"), metav1.GetOptions{})
	if err != nil {
		return fail("get own pod: %v", err)
	}
	fmt.Println("pod", pod.Namespace+"/"+pod.Name)
	_, err = kube.CoreV1().Secrets(string(ns)).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		return fail("list secrets: %v, want 403 Forbidden", err)
	}
	fmt.Println("secrets forbidden")
	return 0
}

// A Pod's program reaches the API server with client-go's default
// loading, as the Pod's ServiceAccount: it reads what a Role grants and
// is refused (403) what it does not, so it is not the admin.
func TestPodAPIAccess(t *testing.T) {
	env, kube := start(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	err := env.Apply(ctx, fmt.Appendf(nil, `
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: %[1]s}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: %[1]s}]
---
apiVersion: v1
kind: Pod
metadata: {name: api, namespace: %[1]s}
spec:
  serviceAccountName: reader
  restartPolicy: Never
  containers:
  - name: c
    image: %[2]s
    env: [{name: WANT_USER, value: "system:serviceaccount:%[1]s:reader"}]
`, ns, apiImage))
	if err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	eventually(t, "the API client Pod to finish", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, fmt.Sprintf("%+v", p.Status)
	})
	logs, err := kube.CoreV1().Pods(ns).GetLogs("api", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if phase != corev1.PodSucceeded {
		t.Fatalf("the Pod %s; its log:\n%s", phase, logs)
	}
	for _, want := range []string{"user system:serviceaccount:" + ns + ":reader", "pod " + ns + "/api", "secrets forbidden"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// What a container sees of its Pod and the cluster: resourceFieldRef
// values (divided by the divisor and rounded up; a limit not set is the
// Node's allocatable), the kubernetes Service in its environment, an
// /etc/hosts of its own, its mounts through kubelet.HostPath and a
// unix: argument (a socket path that fits), and its own PID as the
// container's (the hosts wrapper execs).
func TestContainerEnvironment(t *testing.T) {
	env, kube := start(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	err := env.Apply(ctx, fmt.Appendf(nil, `
apiVersion: v1
kind: Service
metadata: {name: near, namespace: %[1]s}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: res, namespace: %[1]s}
spec:
  hostAliases: [{ip: 10.1.2.3, hostnames: [gw.example, other.example]}]
  volumes: [{name: run, emptyDir: {}}]
  containers:
  - name: c
    image: %[2]s
    args: [-listen=unix:/var/run/tunnelgate/origin.sock]
    ports: [{containerPort: 8080}]
    resources:
      limits: {memory: 64Mi}
      requests: {cpu: 250m}
    volumeMounts: [{name: run, mountPath: /var/run/tunnelgate, subPath: sub}]
    env:
    - {name: GOMEMLIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: MEM_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: CPU_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.cpu}}}
    - {name: CPU_REQUEST_M, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
    - {name: STORAGE_GI, valueFrom: {resourceFieldRef: {containerName: c, resource: limits.ephemeral-storage, divisor: 1Gi}}}
`, ns, netImage))
	if err != nil {
		t.Fatal(err)
	}
	ip := podIP(t, kube, ns, "res")
	hc := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) string {
		t.Helper()
		res, err := hc.Get("http://" + net.JoinHostPort(ip, "8080") + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	kubernetesSvc, err := kube.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"GOMEMLIMIT":              "67108864",
		"MEM_MI":                  "64",
		"MEM_REQUEST":             "64", // the API server defaults a request to its limit
		"CPU_LIMIT":               "8",  // not set: the Node's allocatable
		"CPU_REQUEST":             "1",  // 250m rounded up
		"CPU_REQUEST_M":           "250",
		"STORAGE_GI":              "100", // not set: the Node's allocatable
		"KUBERNETES_SERVICE_HOST": kubernetesSvc.Spec.ClusterIP,
		"KUBERNETES_SERVICE_PORT": "443",
	} {
		if got := get("/env/" + name); got != want {
			t.Errorf("%s=%q, want %q", name, got, want)
		}
	}
	if kc := get("/env/KUBECONFIG"); !strings.HasSuffix(kc, "/c.kubeconfig") {
		t.Errorf("KUBECONFIG=%q; want the kubeconfig for the default ServiceAccount's volume", kc)
	}

	hosts := get("/file?p=/etc/hosts")
	for _, line := range []string{
		"127.0.0.1\tlocalhost\n",
		ip + "\tres\n",
		kubernetesSvc.Spec.ClusterIP + "\tkubernetes.default.svc.cluster.local kubernetes.default.svc kubernetes.default\n", // no short name: another namespace
		"\tnear." + ns + ".svc.cluster.local near." + ns + ".svc near." + ns + " near\n",
		"10.1.2.3\tgw.example other.example\n",
	} {
		if !strings.Contains(hosts, line) {
			t.Errorf("/etc/hosts in the container lacks %q:\n%s", line, hosts)
		}
	}

	sock := get("/hostpath?p=/var/run/tunnelgate/origin.sock")
	if !strings.HasSuffix(sock, "/run/sub/origin.sock") || !strings.HasPrefix(sock, "/") {
		t.Errorf("HostPath in the Pod: %q; want the emptyDir's sub/origin.sock", sock)
	}
	for _, p := range []string{"/var/run/tunnelgatex/origin.sock", "/etc/hosts"} {
		if got := get("/hostpath?p=" + url.QueryEscape(p)); got != p {
			t.Errorf("HostPath(%q) in the Pod: %q; want it unchanged", p, got)
		}
	}
	// The -listen=unix: argument was rewritten to the same host path.
	uc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	res, err := uc.Get("http://pod/env/CPU_REQUEST_M")
	if err != nil {
		t.Fatalf("over the Pod's Unix socket at %s: %v", sock, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "250" {
		t.Errorf("over the Unix socket: %q", b)
	}

	p, err := kube.CoreV1().Pods(ns).Get(ctx, "res", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id, pid := p.Status.ContainerStatuses[0].ContainerID, get("/pid"); id != "tunnelgate-test://"+pid {
		t.Errorf("container ID %s, but the program's PID is %s", id, pid)
	}
}

// The kubernetes Service forwards to the API server, whose certificate
// names its ClusterIP; Stop closes the listeners and takes the Service
// CIDR's route away.
func TestKubernetesServiceAndStop(t *testing.T) {
	env := shared.Env(t)
	k, err := kubelet.Start(t.Context(), env.Config, kubelet.Options{Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			k.Stop()
		}
	})
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := kube.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + net.JoinHostPort(svc.Spec.ClusterIP, "443")
	cfg.Timeout = 5 * time.Second
	viaService, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viaService.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the API server at %s: %v", cfg.Host, err)
	}

	k.Stop()
	stopped = true
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(svc.Spec.ClusterIP, "443"), time.Second); err == nil {
		c.Close()
		t.Error("the kubernetes Service still accepts after Stop")
	}
	out, err := exec.Command("ip", "route", "show", "table", "local").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route: %v: %s", err, out)
	}
	if strings.Contains(string(out), kubeenv.ServiceCIDR) {
		t.Errorf("the Service CIDR is still local after Stop:\n%s", out)
	}
}
