package chart

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/tunnelgate/tunnelgate/internal/cffake"
	"github.com/tunnelgate/tunnelgate/test/connector"
	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
)

// rig is a cluster whose Pods run, with the chart installed: a
// kube-apiserver with kube-controller-manager, the kubelet stand-in
// (tunnelgate's image is the Dockerfile's binary, cloudflared's is
// test/connector), and Cloudflare's API (internal/cffake) and edge
// (test/connector) listening on the Pods' bridge. The release is named
// name, in namespace name-system, with the GatewayClass name of
// controller tunnelgate.dev/name and its tunnel name-tunnel.
type rig struct {
	env       *kubeenv.Env
	kube      kubernetes.Interface
	gw        gwclient.Interface
	fake      *cffake.Fake
	edge      *connector.Edge
	ns, class string
}

const (
	rigAPIToken = "rig-api-token"
	rigAccount  = "0123456789abcdef0123456789abcdef"
	rigZone     = "example.com"
)

func startRig(t testing.TB, name string, helmSet ...string) *rig {
	t.Helper()
	env := kubeenv.StartT(t, kubeenv.Options{ControllerManager: true})
	podCIDR := netip.MustParsePrefix("10.88.0.0/16")
	k, err := kubelet.Start(t.Context(), env.Config, kubelet.Options{
		PodCIDR: podCIDR,
		Images:  map[string]string{"ghcr.io/tunnelgate/tunnelgate": tunnelgateBinary(t)},
		Log:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	// What Pods reach outside the cluster listens on the bridge's address.
	host := podCIDR.Addr().Next().String()

	r := &rig{env: env, kube: kubernetes.NewForConfigOrDie(env.Config), gw: gwclient.NewForConfigOrDie(env.Config),
		ns: name + "-system", class: name}
	r.fake = cffake.New(cffake.Options{Token: rigAPIToken})
	t.Cleanup(r.fake.Close)
	r.fake.AddAccount(rigAccount, "Rig")
	r.fake.AddZone("zone", rigZone, rigAccount)
	apiURL := serveOn(t, host, r.fake) + mustParseURL(t, r.fake.URL()).Path
	if r.edge, err = connector.StartEdge(net.JoinHostPort(host, "0"), r.fake, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.edge.Close() })

	args := []string{"install", name, chartDir, "--namespace", r.ns, "--create-namespace",
		"--set", "cloudflare.apiToken.value=" + rigAPIToken,
		"--set", "cloudflare.accountID=" + rigAccount,
		"--set", "cloudflare.tunnel.name=" + name + "-tunnel",
		"--set", "cloudflare.apiURL=" + apiURL,
		"--set", "gatewayClass.name=" + r.class,
		"--set", "gatewayClass.controllerName=tunnelgate.dev/" + name,
		"--set", "cloudflared.extraArgs[0]=--edge=" + r.edge.Addr(),
	}
	for _, s := range helmSet {
		args = append(args, "--set", s)
	}
	if _, err := helm(t, []string{"KUBECONFIG=" + env.Kubeconfig()}, args...); err != nil {
		t.Fatal(err)
	}
	return r
}

// controller and proxy name the release's Deployments.
func (r *rig) controller() string { return r.class + "-tunnelgate-controller" }
func (r *rig) proxy() string      { return r.class + "-tunnelgate-proxy" }

// dumpPodsOnFailure logs, if the test fails, the state and the last log
// lines of every container of the Pods in ns: what a user would read with
// kubectl describe and kubectl logs.
func (r *rig) dumpPodsOnFailure(t *testing.T, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		pods, err := r.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("pods of %s: %v", ns, err)
			return
		}
		for _, p := range pods.Items {
			t.Logf("pod %s/%s phase %s conditions %v", ns, p.Name, p.Status.Phase, p.Status.Conditions)
			for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
				t.Logf("  container %s ready %v state %+v", cs.Name, cs.Ready, cs.State)
				tail := int64(15)
				b, err := r.kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: cs.Name, TailLines: &tail}).DoRaw(ctx)
				t.Logf("  logs (%v):\n%s", err, b)
			}
		}
	})
}

// webRoute is the YAML of an HTTPRoute "web" in ns for host, on the
// Gateway gw of ns, to the Service app on port 80.
func webRoute(ns, host string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [%[2]s]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`, ns, host)
}

// echoApp is the YAML of an echo Deployment "app" of replicas Pods in ns
// (each answers with its Pod's name and namespace) and its Service "app"
// on port 80.
func echoApp(ns string, replicas int) string {
	return fmt.Sprintf(`
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
      - name: echo
        image: %[3]s
        ports: [{containerPort: 8080}]
        env: [{name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: %[1]s}
spec:
  selector: {app: app}
  ports: [{port: 80, targetPort: 8080}]
`, ns, replicas, kubelet.EchoImage)
}

// gatewayCondition reads a Gateway and its condition of type typ (nil
// while it has none).
func (r *rig) gatewayCondition(ctx context.Context, ns, name, typ string) (*gwv1.Gateway, *metav1.Condition, error) {
	g, err := r.gw.GatewayV1().Gateways(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	return g, meta.FindStatusCondition(g.Status.Conditions, typ), nil
}

// conditionSays checks a Gateway's condition of type typ: its status, its
// reason (any, when reason is ""), and a part of its message.
func (r *rig) conditionSays(ctx context.Context, ns, name, typ string, status metav1.ConditionStatus, reason, text string) error {
	_, c, err := r.gatewayCondition(ctx, ns, name, typ)
	if err != nil {
		return err
	}
	if c == nil || c.Status != status || reason != "" && c.Reason != reason || !strings.Contains(c.Message, text) {
		return fmt.Errorf("%s %+v", typ, c)
	}
	return nil
}
