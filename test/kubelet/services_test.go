package kubelet_test

import (
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
