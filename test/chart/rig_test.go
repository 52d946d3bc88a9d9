package chart

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/tunnelgate/tunnelgate/test/cffake"
	"github.com/tunnelgate/tunnelgate/test/connector"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/realnode"
)

// The images the rig's Pods run, imported into the node's containerd
// (there is no registry): the project's image built from the commit
// under test, and test/podapps' programs, one image each.
const (
	// tunnelgateRepository and tunnelgateTag name realnode.TunnelgateImage
	// as the chart's image values do.
	tunnelgateRepository = "tunnelgate.test/tunnelgate"
	tunnelgateTag        = "realnode"
	// cloudflaredRepository holds the connector stand-in
	// (test/connector) in cloudflared's place, with the official image's
	// entrypoint, `cloudflared --no-autoupdate`.
	cloudflaredRepository = "tunnelgate.test/cloudflared"
	podappsTag            = "realnode"
	// echoImage answers every request with a podapps.EchoResponse.
	echoImage = "tunnelgate.test/echo:" + podappsTag
	// protocolsImage speaks every protocol a Gateway routes
	// (podapps.Protocols).
	protocolsImage = "tunnelgate.test/protocols:" + podappsTag
	podappsPackage = "github.com/tunnelgate/tunnelgate/test/podapps/cmd/podapps"
)

// images imports the rig's images into the package's node, once.
var images struct {
	once sync.Once
	err  error
}

// nodeWithImages is the package's control plane and real node with the
// rig's images imported. The project's image is built as `make image`
// builds it (go run ./release image), from the working tree, for this
// machine's architecture.
func nodeWithImages(t testing.TB) (*kubeenv.Env, *realnode.Node) {
	t.Helper()
	env, node := shared.Node(t)
	images.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		began := time.Now()
		if images.err = node.ImportTunnelgateImage(ctx); images.err != nil {
			return
		}
		built := time.Since(began)
		images.err = node.ImportProgram(ctx, podappsPackage, map[string][]string{
			echoImage:                                {"echo"},
			protocolsImage:                           {"protocols"},
			cloudflaredRepository + ":" + podappsTag: {"cloudflared", "--no-autoupdate"},
		})
		t.Logf("images: tunnelgate built and imported in %v, the test programs' in %v",
			built.Round(100*time.Millisecond), (time.Since(began) - built).Round(100*time.Millisecond))
	})
	if images.err != nil {
		t.Fatal(images.err)
	}
	return env, node
}

// rig is the chart installed on the package's real node (test/realnode:
// kube-apiserver, kube-controller-manager, kube-scheduler, a kubelet with
// containerd and runc, kube-proxy, CoreDNS), its Pods running the
// project's image built from this commit and cloudflared's stand-in,
// with Cloudflare's API (test/cffake) and edge (test/connector)
// listening in the test process at the node's address, which Pods reach.
// The release is named name, in namespace name-system, with the
// GatewayClass name of controller tunnelgate.dev/name and its tunnel
// name-tunnel. The node is shared by the package's tests, so everything
// is named after the test, and when the test ends the namespaces it
// made (apply), the release, its namespace and its GatewayClass go.
type rig struct {
	env        *kubeenv.Env
	node       *realnode.Node
	kube       kubernetes.Interface
	gw         gwclient.Interface
	fake       *cffake.Fake
	edge       *connector.Edge
	name       string
	ns, class  string
	apiURL     string
	namespaces []string // made by apply, deleted at the end
	// stops closes Cloudflare's API and edge, last: the controller
	// needs them to let go of the Gateways it holds.
	stops []func()
}

const (
	rigAPIToken = "rig-api-token"
	rigAccount  = "0123456789abcdef0123456789abcdef"
	rigZone     = "example.com"
)

// startRig is newRig, then install with helmSet.
func startRig(t testing.TB, name string, helmSet ...string) *rig {
	t.Helper()
	r := newRig(t, name)
	if _, err := r.install(t, helmSet...); err != nil {
		t.Fatal(err)
	}
	return r
}

// newRig readies the cluster, the images and Cloudflare for a release
// called name, and cleans up after the test; it installs nothing.
func newRig(t testing.TB, name string) *rig {
	t.Helper()
	env, node := nodeWithImages(t)
	r := &rig{env: env, node: node, kube: kubernetes.NewForConfigOrDie(env.Config), gw: gwclient.NewForConfigOrDie(env.Config),
		name: name, ns: name + "-system", class: name}
	// Registered first, so it runs last: after the test's own cleanups
	// (which log the Pods of a failed test).
	t.Cleanup(func() { r.cleanup(t) })
	r.fake = cffake.New(cffake.Options{Token: rigAPIToken})
	r.stops = append(r.stops, r.fake.Close)
	r.fake.AddAccount(rigAccount, "Rig")
	r.fake.AddZone("zone", rigZone, rigAccount)
	apiURL, stopAPI := listenAndServe(t, realnode.NodeIP, r.fake)
	r.stops = append(r.stops, stopAPI)
	r.apiURL = apiURL + mustParseURL(t, r.fake.URL()).Path
	var err error
	if r.edge, err = connector.StartEdge(net.JoinHostPort(realnode.NodeIP, "0"), r.fake, nil); err != nil {
		t.Fatal(err)
	}
	r.stops = append(r.stops, func() { r.edge.Close() })
	return r
}

// values are the --set flags of the rig's release, then helmSet.
func (r *rig) values(helmSet ...string) []string {
	var args []string
	for _, s := range append([]string{
		"image.repository=" + tunnelgateRepository,
		"image.tag=" + tunnelgateTag,
		"cloudflared.image.repository=" + cloudflaredRepository,
		"cloudflared.image.tag=" + podappsTag,
		"cloudflare.apiToken.value=" + rigAPIToken,
		"cloudflare.accountID=" + rigAccount,
		"cloudflare.tunnel.name=" + r.name + "-tunnel",
		"cloudflare.apiURL=" + r.apiURL,
		"gatewayClass.name=" + r.class,
		"gatewayClass.controllerName=tunnelgate.dev/" + r.name,
		"cloudflared.extraArgs[0]=--edge=" + r.edge.Addr(),
	}, helmSet...) {
		args = append(args, "--set", s)
	}
	return args
}

// install runs helm install with the rig's values and helmSet, and
// returns helm's output.
func (r *rig) install(t testing.TB, helmSet ...string) (string, error) {
	t.Helper()
	return r.helm(t, append([]string{"install", r.name, chartDir, "--namespace", r.ns, "--create-namespace"}, r.values(helmSet...)...)...)
}

// helm runs helm against the rig's cluster.
func (r *rig) helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return helm(t, []string{"KUBECONFIG=" + r.env.Kubeconfig()}, args...)
}

// apply applies docs (a YAML stream); the Namespaces among them are
// deleted when the test ends.
func (r *rig) apply(t testing.TB, docs string) {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(docs), 4096)
	for {
		var head struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := dec.Decode(&head); err != nil {
			break
		}
		if head.Kind == "Namespace" && !slices.Contains(r.namespaces, head.Metadata.Name) {
			r.namespaces = append(r.namespaces, head.Metadata.Name)
		}
	}
	if err := r.env.Apply(t.Context(), []byte(docs)); err != nil {
		t.Fatal(err)
	}
}

// cleanup leaves the node as the rig found it: the Gateways in the
// test's namespaces deleted while the controller and Cloudflare still
// run (the controller removes its records and then its finalizers from
// them), then the release, its GatewayClass and the namespaces, waiting
// until they are gone so the next test has the node's CPU to itself,
// and last Cloudflare.
func (r *rig) cleanup(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	began := time.Now()
	for _, ns := range r.namespaces {
		if err := r.gw.GatewayV1().Gateways(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Gateways of %s: %v", ns, err)
		}
	}
	for _, ns := range r.namespaces {
		for {
			list, err := r.gw.GatewayV1().Gateways(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) == 0 {
				break
			}
			if ctx.Err() != nil {
				t.Errorf("Gateways of %s not gone after their deletion: %v", ns, list.Items[0].Finalizers)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	_, _ = r.helm(t, "uninstall", r.name, "--namespace", r.ns)
	_ = r.gw.GatewayV1().GatewayClasses().Delete(ctx, r.class, metav1.DeleteOptions{})
	_ = r.env.Dynamic().Resource(gvrClassConfig).Delete(ctx, r.class, metav1.DeleteOptions{})
	r.deleteNamespaces(ctx, t, append(r.namespaces, r.ns)...)
	for _, stop := range slices.Backward(r.stops) {
		stop()
	}
	t.Logf("rig %s cleaned up in %v", r.name, time.Since(began).Round(100*time.Millisecond))
}

// deleteNamespaces deletes the namespaces and waits until they are gone.
func (r *rig) deleteNamespaces(ctx context.Context, t testing.TB, names ...string) {
	for _, ns := range names {
		if err := r.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	}
	for _, ns := range names {
		for {
			_, err := r.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				t.Errorf("namespace %s not gone after its deletion: %v\n%s", ns, err, r.node.DescribePods(context.Background(), ns))
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// controller and proxy name the release's Deployments.
func (r *rig) controller() string { return r.class + "-tunnelgate-controller" }
func (r *rig) proxy() string      { return r.class + "-tunnelgate-proxy" }

// dumpPodsOnFailure logs, if the test fails, the state and the last log
// lines of every container of the Pods in ns, and the namespace's events:
// what a user would read with kubectl describe and kubectl logs.
func (r *rig) dumpPodsOnFailure(t *testing.T, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		t.Logf("%s", r.node.DescribePods(ctx, ns))
		pods, err := r.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("pods of %s: %v", ns, err)
			return
		}
		for _, p := range pods.Items {
			for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
				tail := int64(15)
				b, err := r.kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: cs.Name, TailLines: &tail}).DoRaw(ctx)
				t.Logf("pod %s/%s container %s logs (%v):\n%s", ns, p.Name, cs.Name, err, b)
			}
		}
	})
}

// echoSite is the YAML of namespace ns holding an echo app of replicas
// Pods (echoApp), a Gateway "gw" of class listening for *.example.com,
// and the HTTPRoute "web" for app.example.com to the app (webRoute).
func echoSite(ns, class string, replicas int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns) +
		echoApp(ns, replicas) + "---\n" +
		fixture.GatewayYAML(ns, "gw", class, `{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}`) + "---\n" +
		webRoute(ns, "app.example.com")
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
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        env: [{name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: %[1]s}
spec:
  selector: {app: app}
  ports: [{port: 80, targetPort: 8080}]
`, ns, replicas, echoImage)
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
