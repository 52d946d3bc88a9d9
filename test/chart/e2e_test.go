package chart

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/realnode"
)

// The installed chart runs end to end on the real node, from the image
// built from this commit: helm installs a release that manages its tunnel
// by name; its two controllers, in-cluster clients of the API server as
// the chart's ServiceAccount (only its RBAC applies), accept the
// GatewayClass, create the tunnel in Cloudflare (the fake) and elect a
// leader among their Pods; its two proxy Pods find the controllers by the
// Service's DNS name (CoreDNS, kube-proxy) and trust them by the chart's
// CA; each Pod's cloudflared (the stand-in) reads the tunnel's token from
// its Secret volume and connects to the edge; a visitor's request goes
// edge → cloudflared → the proxy's origin listener → a backend Pod; and
// with proxy.inClusterService a client in the cluster reaches the route
// through the -http Service, by ClusterIP from the node and by DNS name
// from a Pod, which the Gateway lists after the tunnel's hostname.
func TestChartRunsEndToEnd(t *testing.T) {
	r := startRig(t, "e2e", "proxy.inClusterService.enabled=true")
	r.dumpPodsOnFailure(t, r.ns)
	ctx := t.Context()
	const app = "e2e-app"
	r.dumpPodsOnFailure(t, app)
	r.apply(t, echoSite(app, r.class, 1))

	// The GatewayClass the chart made is accepted: the credentials Secret,
	// the account and the tunnel name work.
	eventually(t, 2*time.Minute, "GatewayClass e2e Accepted", func() error {
		gc, err := r.env.Dynamic().Resource(gvrGatewayClass).Get(ctx, r.class, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return conditionTrue(gc, "Accepted")
	})
	tunnels := r.fake.Tunnels(rigAccount)
	if len(tunnels) != 1 || tunnels[0].Name != "e2e-tunnel" {
		t.Fatalf("Cloudflare has tunnels %+v; want the one named e2e-tunnel the controller created", tunnels)
	}
	tunnelID := tunnels[0].ID
	for _, d := range []string{r.controller(), r.proxy()} {
		waitRolledOut(t, r.kube, r.ns, d, 3*time.Minute)
	}
	controllers := podsOf(t, r, "controller")
	eventually(t, time.Minute, "a controller Pod holding the leader Lease", func() error {
		lease, err := r.kube.CoordinationV1().Leases(r.ns).Get(ctx, r.controller(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || !slices.ContainsFunc(controllers, func(p corev1.Pod) bool { return p.Name == *lease.Spec.HolderIdentity }) {
			return fmt.Errorf("Lease held by %v; want one of the controller Pods", lease.Spec.HolderIdentity)
		}
		return nil
	})

	// A visitor's request through the edge and either proxy Pod's
	// cloudflared, answered by the backend Pod.
	visitor := r.edge.Client(10 * time.Second)
	eventually(t, 90*time.Second, "the route through the edge", func() error {
		if err := connectorsOf(r, r.proxy(), 2); err != nil {
			return err
		}
		for range 2 { // one request through each connector
			echo, err := visitEcho(visitor, "http://app.example.com/hello")
			if err != nil {
				return err
			}
			if echo.Path != "/hello" || echo.Namespace != app {
				return fmt.Errorf("answered %+v", echo)
			}
		}
		return nil
	})

	// Every controller replica hands the proxies the session keys of the
	// Secret the chart generated, so all proxies pin clients alike; the
	// config API answers the chart's token over TLS for the Service's name.
	internal, err := r.kube.CoreV1().Secrets(r.ns).Get(ctx, r.name+"-tunnelgate-internal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(internal.Data["ca.crt"])
	keys, err := r.kube.CoreV1().Secrets(r.ns).Get(ctx, r.name+"-tunnelgate-session-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfgClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: r.controller() + "." + r.ns + ".svc"}}}
	for _, pod := range controllers {
		req, _ := http.NewRequest("GET", "https://"+net.JoinHostPort(pod.Status.PodIP, "8081")+"/v1/config?wait=0s", nil)
		req.Header.Set("Authorization", "Bearer "+string(internal.Data["config-token"]))
		res, err := cfgClient.Do(req)
		if err != nil {
			t.Fatalf("%s config API: %v", pod.Name, err)
		}
		var doc struct {
			Config struct{ SessionKeys [][]byte }
		}
		err = json.NewDecoder(res.Body).Decode(&doc)
		res.Body.Close()
		if err != nil || len(doc.Config.SessionKeys) != 1 || string(doc.Config.SessionKeys[0]) != string(keys.Data["current"]) {
			t.Errorf("%s publishes session keys %d (%v); want the Secret's current key", pod.Name, len(doc.Config.SessionKeys), err)
		}
	}

	// In-cluster clients (proxy.inClusterService): the -http Service's
	// ClusterIP answers the route from the node (kube-proxy), its DNS name
	// from a Pod (CoreDNS), and the Gateway lists that name after the
	// tunnel's hostname.
	httpSvc := r.proxy() + "-http"
	svc, err := r.kube.CoreV1().Services(r.ns).Get(ctx, httpSvc, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inCluster := &http.Client{Timeout: 10 * time.Second}
	eventually(t, time.Minute, "the route at the -http Service's ClusterIP", func() error {
		echo, err := visitEcho(inCluster, "http://"+svc.Spec.ClusterIP+"/in-cluster", "app.example.com")
		if err == nil && echo.Path != "/in-cluster" {
			err = fmt.Errorf("answered %+v", echo)
		}
		return err
	})
	name := httpSvc + "." + r.ns + ".svc.cluster.local"
	if out := runProbe(t, r, app, "in-cluster", "get", "-host", "app.example.com", "http://"+name+"/from-a-pod"); !strings.Contains(out, "200 OK") {
		t.Errorf("GET from a Pod by the Service's name: %q; want 200 OK", out)
	}
	eventually(t, 30*time.Second, "the Gateway's addresses", func() error {
		gw, err := r.env.Dynamic().Resource(gvrGateway).Namespace(app).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		addrs, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
		var got []string
		for _, a := range addrs {
			v, _, _ := unstructured.NestedString(a.(map[string]any), "value")
			got = append(got, v)
		}
		want := []string{tunnelID + translate.TunnelHostnameSuffix, name}
		if !slices.Equal(got, want) {
			return fmt.Errorf("status.addresses %v, want %v", got, want)
		}
		return nil
	})
	for _, pod := range podsOf(t, r, "proxy") {
		if res, err := http.Get("http://" + net.JoinHostPort(pod.Status.PodIP, "9901") + "/readyz"); err != nil || res.StatusCode != http.StatusOK {
			t.Errorf("proxy %s /readyz: %v %v", pod.Name, res, err)
		} else {
			res.Body.Close()
		}

		// cloudflared's side: the token file it runs with, as its process
		// sees it, is the tunnel's.
		tok, err := os.ReadFile(containerFile(t, r, pod, "cloudflared", "/etc/cloudflared/token/token"))
		if err != nil {
			t.Fatalf("cloudflared's token file: %v", err)
		}
		var fields struct{ A, T string }
		if b, err := base64.StdEncoding.DecodeString(string(tok)); err != nil || json.Unmarshal(b, &fields) != nil || fields.A != rigAccount || fields.T != tunnelID {
			t.Errorf("cloudflared's token %q is not tunnel %s of account %s", tok, tunnelID, rigAccount)
		}
	}
	// The ingress document sends the hostname to the proxy's origin
	// listener on loopback.
	doc, _ := r.fake.TunnelConfig(rigAccount, tunnelID)
	if !strings.Contains(string(doc), `"hostname":"app.example.com"`) || !strings.Contains(string(doc), `"service":"http://localhost:8080"`) {
		t.Errorf("ingress document %s; want app.example.com to http://localhost:8080", doc)
	}
}

// podsOf lists the release's Pods of a component (controller or proxy).
func podsOf(t testing.TB, r *rig, component string) []corev1.Pod {
	t.Helper()
	pods, err := r.kube.CoreV1().Pods(r.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=" + component})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// containerPID is the pid, as the test sees it, of the process of the
// Pod's container name (an init container or not).
func containerPID(t testing.TB, r *rig, pod corev1.Pod, name string) int {
	t.Helper()
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if cs.Name == name {
			pid, err := r.node.ContainerPID(cs.ContainerID)
			if err != nil {
				t.Fatalf("%s/%s: %v", pod.Name, name, err)
			}
			return pid
		}
	}
	t.Fatalf("Pod %s has no container %s", pod.Name, name)
	return 0
}

// containerFile is where the test finds a path of a running container's
// filesystem: through its process's root.
func containerFile(t testing.TB, r *rig, pod corev1.Pod, container, path string) string {
	return fmt.Sprintf("/proc/%d/root%s", containerPID(t, r, pod, container), path)
}

// runProbe runs realnode's probe with args in a Pod of ns that runs once,
// waits for it to succeed and returns its output.
func runProbe(t *testing.T, r *rig, ns, name string, args ...string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: realnode.ProbeImage, ImagePullPolicy: corev1.PullNever, Args: args,
			}},
		},
	}
	if _, err := r.kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	eventually(t, 2*time.Minute, "the probe Pod "+name+" to finish", func() error {
		p, err := r.kube.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if phase = p.Status.Phase; phase != corev1.PodSucceeded && phase != corev1.PodFailed {
			return fmt.Errorf("phase %s", phase)
		}
		return nil
	})
	b, err := r.kube.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: "probe"}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("log of the probe Pod %s: %v", name, err)
	}
	if phase != corev1.PodSucceeded {
		t.Fatalf("probe %v failed; its output:\n%s", args, b)
	}
	return string(b)
}

// conditionTrue says why the object's condition typ is not True, or nil.
func conditionTrue(u *unstructured.Unstructured, typ string) error {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			if m["status"] == "True" {
				return nil
			}
			return fmt.Errorf("%s is %v: %v: %v", typ, m["status"], m["reason"], m["message"])
		}
	}
	return fmt.Errorf("no %s condition", typ)
}

// eventually retries check until it returns nil or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
