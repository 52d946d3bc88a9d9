package chart

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// A Gateway with a data plane of its own, beside one on the chart's shared
// proxies, through the real path: the controller provisions the plane
// (Deployment, Service, ServiceAccount, PodDisruptionBudget,
// NetworkPolicy, credentials Secret, all owned by the Gateway and labelled
// from spec.infrastructure),
// creates the Gateway's own tunnel, and the plane's Pods run on the
// kubelet stand-in with a connector of that tunnel. The edge routes each
// hostname by its DNS record, so a request for the tenant's hostname can
// only be served by the tenant's Pods. Then: the Gateway is Programmed at
// its tunnel's address, and one whose proxies cannot start says why; each
// credential reads its own config only; a hand edit is put back;
// parameters and labels change the plane; autoscaling adds an autoscaler
// and removing it prunes it; back on the shared proxies the plane goes
// and the hostname moves to the class's tunnel; deleting a Gateway
// deletes its plane and DNS records, and keeps its tunnel; a Gateway on
// the shared proxies moves to a plane of its own, served by them until
// its plane is ready.
func TestDedicatedPlanes(t *testing.T) {
	r := startRig(t, "planes")
	r.edge.RouteByDNS(r.fake)
	r.dumpPodsOnFailure(t, "team-a")
	r.dumpPodsOnFailure(t, r.ns)
	ctx := t.Context()
	r.apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: own, namespace: team-a}
spec:
  dataPlane: Dedicated
  replicas: 1
  tunnel: {name: team-a-tunnel}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: team-a}
spec:
  gatewayClassName: %[1]s
  infrastructure:
    labels: {team: a}
    annotations: {example.com/owner: team-a}
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: own}
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "a.example.com"}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: team-b}
spec:
  gatewayClassName: %[1]s
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "b.example.com"}]
`+backend("team-a")+backend("team-b"), r.class))
	plane := provision.Name("gw", r.class)
	gwA := types.NamespacedName{Namespace: "team-a", Name: "gw"}
	waitRolledOut(t, r.kube, r.ns, r.proxy(), 3*time.Minute)
	waitRolledOut(t, r.kube, "team-a", plane, time.Minute)

	// What the plane is made of, owned by the Gateway and labelled from it.
	gwUID := gatewayUID(t, r, gwA)
	var d *appsv1.Deployment
	eventually(t, 30*time.Second, "every object of the plane, controlled by its Gateway", func() (err error) {
		d, err = planeObjects(ctx, r.kube, gwA, plane, gwUID)
		return err
	})
	if d.Labels["team"] != "a" || d.Annotations["example.com/owner"] != "team-a" || d.Spec.Template.Labels["team"] != "a" {
		t.Errorf("plane Deployment labels %v annotations %v: want spec.infrastructure's", d.Labels, d.Annotations)
	}

	// Each hostname through its own tunnel: the tenant's only through the
	// plane's connectors, which are its Pods.
	tunnelA := tunnelID(t, r, "team-a-tunnel")
	visitor := r.edge.Client(10 * time.Second)
	eventually(t, 90*time.Second, "both hostnames served through their tunnels", func() error {
		if err := visitBackend(visitor, "a.example.com", "team-a"); err != nil {
			return err
		}
		return visitBackend(visitor, "b.example.com", "team-b")
	})
	if got := r.edge.ConnectorsOf(tunnelA); len(got) != 1 || !strings.HasPrefix(got[0], plane+"-") {
		t.Errorf("connectors of the tenant's tunnel: %v; want the plane's one Pod", got)
	}
	if slices.ContainsFunc(r.edge.Connectors(), func(c string) bool {
		return strings.HasPrefix(c, r.proxy()) && slices.Contains(r.edge.ConnectorsOf(tunnelA), c)
	}) {
		t.Error("a shared proxy Pod connects the tenant's tunnel")
	}

	// The Gateway is Programmed, at its own tunnel's address.
	eventually(t, 30*time.Second, "the tenant's Gateway Programmed at its tunnel's address", func() error {
		g, c, err := r.gatewayCondition(ctx, "team-a", "gw", "Programmed")
		if err != nil {
			return err
		}
		if c == nil || c.Status != metav1.ConditionTrue || len(g.Status.Addresses) == 0 || g.Status.Addresses[0].Value != tunnelA+".cfargotunnel.com" {
			return fmt.Errorf("Programmed %+v, addresses %+v", c, g.Status.Addresses)
		}
		// Its status records the tunnel as created for it, and the
		// controller's finalizer holds it for the cleanup in Cloudflare.
		rec := meta.FindStatusCondition(g.Status.Conditions, translate.GatewayConditionTunnel)
		if rec == nil || rec.Reason != translate.TunnelReasonCreated || !strings.HasPrefix(rec.Message, "tunnel "+tunnelA+" ") {
			return fmt.Errorf("%s: %+v", translate.GatewayConditionTunnel, rec)
		}
		if !slices.Contains(g.Finalizers, translate.TunnelFinalizer) {
			return fmt.Errorf("finalizers %v", g.Finalizers)
		}
		return nil
	})

	// A plane whose proxies cannot start says why, on the Gateway's
	// Programmed condition and in a Warning event.
	if err := r.env.Apply(ctx, []byte(planeGateway("team-a", "broken", r.class, "name: team-a-broken, deleteWithGateway: true", "broken.example.com",
		"proxy: {image: registry.example.com/missing:1}")+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broken, namespace: team-a}
spec:
  parentRefs: [{name: broken}]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the broken plane's Gateway says why it is not Programmed", func() error {
		if err := r.conditionSays(ctx, "team-a", "broken", "Programmed", metav1.ConditionFalse, "", "ErrImagePull"); err != nil {
			return err
		}
		events, err := r.kube.CoreV1().Events("team-a").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=broken,involvedObject.kind=Gateway"})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "ErrImagePull")
		}) {
			return fmt.Errorf("no Warning event naming ErrImagePull among %d events", len(events.Items))
		}
		return nil
	})

	// A plane the cluster refuses to make (a quota on Services in its
	// namespace) says so on its Gateway.
	r.apply(t, `
apiVersion: v1
kind: Namespace
metadata: {name: team-q}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: no-services, namespace: team-q}
spec:
  hard: {services: "0"}
---`+planeGateway("team-q", "gw", r.class, "name: team-q", "q.example.com", ""))
	eventually(t, 60*time.Second, "a plane refused by a quota said so", func() error {
		return r.conditionSays(ctx, "team-q", "gw", "Programmed", metav1.ConditionFalse, "NoResources", "exceeded quota")
	})

	// Each credential reads its own config: the plane's, its Gateway's
	// listeners and session keys of its own; the shared proxies', no
	// listener of the plane's Gateway; a wrong token, nothing.
	api := configAPI(t, r)
	planeToken := secretKey(t, r.kube, "team-a", plane+"-credentials", provision.KeyConfigToken)
	sharedToken := secretKey(t, r.kube, r.ns, r.class+"-tunnelgate-internal", "config-token")
	planeCfg, sharedCfg := api.read(t, planeToken), api.read(t, sharedToken)
	if names := listenerNames(planeCfg); len(names) != 1 || names[0] != "team-a/gw/http" {
		t.Errorf("the plane's config has listeners %v; want team-a/gw/http alone", names)
	}
	if names := listenerNames(sharedCfg); slices.Contains(names, "team-a/gw/http") || !slices.Contains(names, "team-b/gw/http") {
		t.Errorf("the shared config has listeners %v; want team-b's and not team-a's", names)
	}
	if len(planeCfg.SessionKeys) == 0 || slices.ContainsFunc(planeCfg.SessionKeys, func(k []byte) bool {
		return slices.ContainsFunc(sharedCfg.SessionKeys, func(s []byte) bool { return string(s) == string(k) })
	}) {
		t.Error("the plane's session keys are missing or shared with the shared proxies")
	}
	if code := api.status(t, "not-"+planeToken); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", code)
	}

	// A hand edit is put back.
	scale(t, r.kube, "team-a", plane, 3)
	eventually(t, 30*time.Second, "the plane's replicas put back", func() error {
		return wantReplicas(ctx, r.kube, "team-a", plane, 1)
	})

	// Parameters and labels change the plane.
	setOwnPlane(t, r, "replicas: 2")
	patchGateway(t, r, gwA, `{"spec":{"infrastructure":{"labels":{"team":"alpha"}}}}`)
	eventually(t, 30*time.Second, "two replicas labelled team=alpha", func() error {
		d, err := r.kube.AppsV1().Deployments("team-a").Get(ctx, plane, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 2 || d.Labels["team"] != "alpha" || d.Spec.Template.Labels["team"] != "alpha" {
			return fmt.Errorf("replicas %d, labels %v", *d.Spec.Replicas, d.Labels)
		}
		return nil
	})
	waitRolledOut(t, r.kube, "team-a", plane, 3*time.Minute)
	eventually(t, 60*time.Second, "two connectors of the tenant's tunnel", func() error {
		if n := len(r.edge.ConnectorsOf(tunnelA)); n != 2 {
			return fmt.Errorf("%d connectors", n)
		}
		return visitBackend(visitor, "a.example.com", "team-a")
	})

	// Autoscaling adds an autoscaler; going back to replicas prunes it.
	hpas := r.kube.AutoscalingV2().HorizontalPodAutoscalers("team-a")
	for _, step := range []struct {
		spec string
		want bool
	}{{"autoscaling: {minReplicas: 1, maxReplicas: 3}", true}, {"replicas: 1", false}} {
		setOwnPlane(t, r, step.spec)
		eventually(t, 30*time.Second, step.spec, func() error {
			_, err := hpas.Get(ctx, plane, metav1.GetOptions{})
			if got := err == nil; got != step.want {
				return fmt.Errorf("autoscaler exists: %v (%v), want %v", got, err, step.want)
			}
			return nil
		})
	}

	setOwnPlane(t, r, "replicas: 1\n  serveInCluster: true")
	checkServingInCluster(t, r, gwA, plane, tunnelA, visitor)

	// Back to the shared proxies: the plane goes, the hostname moves to
	// the class's tunnel, its DNS record with it. Its own tunnel stays,
	// its document emptied, and the Gateway's finalizer goes.
	setOwnPlaneShared(t, r)
	eventually(t, 60*time.Second, "the plane deleted once its Gateway wants none", func() error {
		return gone(ctx, r.kube, "team-a", plane, false)
	})
	eventually(t, 60*time.Second, "the tunnel it left kept, emptied, and the finalizer gone", func() error {
		if hosts := ingressHostnames(t, r, tunnelA); len(hosts) != 0 {
			return fmt.Errorf("the tunnel it left still routes %v", hosts)
		}
		g, err := r.gw.GatewayV1().Gateways("team-a").Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if slices.Contains(g.Finalizers, translate.TunnelFinalizer) {
			return fmt.Errorf("finalizers %v", g.Finalizers)
		}
		return nil
	})
	tunnelID(t, r, "team-a-tunnel") // fails the test if deleted
	classTunnel := tunnelID(t, r, r.class+"-tunnel")
	eventually(t, 60*time.Second, "the tenant's hostname through the class's tunnel", func() error {
		if err := cnameTo(r, "a.example.com", classTunnel); err != nil {
			return err
		}
		return visitBackend(visitor, "a.example.com", "team-a")
	})

	// Deleting a Gateway deletes its plane and its DNS records, and, as
	// its GatewayConfig asks (deleteWithGateway) and its status records
	// creating it, its tunnel, though connectors are still connected to
	// it; the finalizer then lets the Gateway go, and the garbage
	// collector takes the rest.
	brokenPlane := provision.Name("broken", r.class)
	var brokenTunnel string
	eventually(t, 60*time.Second, "the broken Gateway's tunnel, and its hostname's CNAME to it", func() error {
		brokenTunnel = ""
		for _, tun := range r.fake.Tunnels(rigAccount) {
			if tun.Name == "team-a-broken" && tun.DeletedAt.IsZero() {
				brokenTunnel = tun.ID
			}
		}
		if brokenTunnel == "" {
			return fmt.Errorf("no tunnel team-a-broken")
		}
		return cnameTo(r, "broken.example.com", brokenTunnel)
	})
	eventually(t, 30*time.Second, "the broken Gateway's tunnel recorded as created, to be deleted with it", func() error {
		_, c, err := r.gatewayCondition(ctx, "team-a", "broken", translate.GatewayConditionTunnel)
		if err != nil {
			return err
		}
		if c == nil || c.Reason != translate.TunnelReasonCreatedDeleteWithGateway {
			return fmt.Errorf("%+v", c)
		}
		return nil
	})
	if err := r.fake.Connect(rigAccount, brokenTunnel, "a-connector-still-running"); err != nil {
		t.Fatal(err)
	}
	if err := r.gw.GatewayV1().Gateways("team-a").Delete(ctx, "broken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the Gateway, its plane, DNS records and tunnel deleted", func() error {
		if _, err := r.gw.GatewayV1().Gateways("team-a").Get(ctx, "broken", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Gateway is still there: %v", err)
		}
		if err := gone(ctx, r.kube, "team-a", brokenPlane, true); err != nil {
			return err
		}
		for _, rec := range r.fake.Records("zone") {
			if rec.Name == "broken.example.com" || rec.Name == "_tunnelgate.broken.example.com" {
				return fmt.Errorf("still there: %s %s → %s", rec.Type, rec.Name, rec.Content)
			}
		}
		for _, tun := range r.fake.Tunnels(rigAccount) {
			if tun.ID == brokenTunnel && tun.DeletedAt.IsZero() {
				return fmt.Errorf("tunnel team-a-broken not deleted")
			}
		}
		return nil
	})
	tunnelID(t, r, "team-a-tunnel") // fails the test if deleted
	if err := visitBackend(visitor, "b.example.com", "team-b"); err != nil {
		t.Errorf("the shared Gateway after the tenant's went: %v", err)
	}

	// A Gateway on the shared proxies moves to a plane of its own. While
	// its plane has no ready proxy (here: an image that cannot be pulled)
	// the shared proxies keep serving it through the class's tunnel, and
	// its status says what it waits for; once the plane is ready its
	// record changes hands, and the plane serves it.
	moveB := func(image string) {
		t.Helper()
		if err := r.env.Apply(ctx, []byte(`
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: own, namespace: team-b}
spec:
  dataPlane: Dedicated
  replicas: 1
  tunnel: {name: team-b-tunnel}
`+image)); err != nil {
			t.Fatal(err)
		}
	}
	moveB("  proxy: {image: registry.example.com/missing:1}\n")
	patchGateway(t, r, types.NamespacedName{Namespace: "team-b", Name: "gw"},
		`{"spec":{"infrastructure":{"parametersRef":{"group":"tunnelgate.dev","kind":"GatewayConfig","name":"own"}}}}`)
	eventually(t, 60*time.Second, "the moving Gateway still on the shared proxies, saying why", func() error {
		return r.conditionSays(ctx, "team-b", "gw", "Programmed", metav1.ConditionTrue, "", "ErrImagePull")
	})
	for range 20 {
		if err := cnameTo(r, "b.example.com", classTunnel); err != nil {
			t.Fatalf("while its plane cannot start: %v", err)
		}
		if err := visitBackend(visitor, "b.example.com", "team-b"); err != nil {
			g, _ := r.gw.GatewayV1().Gateways("team-b").Get(ctx, "gw", metav1.GetOptions{})
			t.Fatalf("while its plane cannot start: %v\nGateway status: %+v", err, g.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	moveB("")
	eventually(t, 90*time.Second, "the moved Gateway's hostname through its own tunnel", func() error {
		tunnelB := ""
		for _, tun := range r.fake.Tunnels(rigAccount) {
			if tun.Name == "team-b-tunnel" {
				tunnelB = tun.ID
			}
		}
		if tunnelB == "" {
			return fmt.Errorf("no tunnel team-b-tunnel yet")
		}
		if err := cnameTo(r, "b.example.com", tunnelB); err != nil {
			return err
		}
		if n := len(r.edge.ConnectorsOf(tunnelB)); n != 1 {
			return fmt.Errorf("%d connectors of the Gateway's own tunnel", n)
		}
		return visitBackend(visitor, "b.example.com", "team-b")
	})

	checkRelayedPlane(t, r, api, sharedToken, classTunnel)
	checkTenantsApart(t, r, api, sharedToken, "team-b", "team-r")
}

// checkTenantsApart: two tenants' planes (and the shared proxies) running
// side by side each read, with their own token, a config holding only
// their own Gateway's listeners, routes and clusters, and session keys
// none of the others holds; each plane's Pods mount only Secrets of their
// own plane.
func checkTenantsApart(t *testing.T, r *rig, api *configAPIClient, sharedToken string, tenants ...string) {
	t.Helper()
	plane := provision.Name("gw", r.class)
	keys := map[string]string{} // session key → who holds it
	owns := func(who string, cfg *proxycfg.Config) {
		for _, k := range cfg.SessionKeys {
			if other, ok := keys[string(k)]; ok {
				t.Errorf("%s and %s hold the same session key", who, other)
			}
			keys[string(k)] = who
		}
	}
	owns("the shared proxies", api.read(t, sharedToken))
	for _, ns := range tenants {
		cfg := api.read(t, secretKey(t, r.kube, ns, plane+"-credentials", provision.KeyConfigToken))
		owns(ns, cfg)
		if names := listenerNames(cfg); !slices.Equal(names, []string{ns + "/gw/http"}) {
			t.Errorf("%s's plane config has listeners %v; want its own alone", ns, names)
		}
		for _, rt := range cfg.Routes {
			if rt.Namespace != ns {
				t.Errorf("%s's plane config holds route %s/%s", ns, rt.Namespace, rt.Name)
			}
		}
		for _, c := range cfg.Clusters {
			if !strings.HasPrefix(c.Name, ns+"/") {
				t.Errorf("%s's plane config holds cluster %s", ns, c.Name)
			}
		}
		d, err := r.kube.AppsV1().Deployments(ns).Get(t.Context(), plane, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && !strings.HasPrefix(v.Secret.SecretName, plane+"-") {
				t.Errorf("%s's plane mounts Secret %s, not its own", ns, v.Secret.SecretName)
			}
		}
	}
}

// checkServingInCluster: team-a's plane, with its own tunnel, serves in
// the cluster too (serveInCluster). Its Service's ClusterIP follows the
// tunnel's address on the Gateway, and a client in the cluster reaches
// the tenant's backend at that ClusterIP on the listener's port, while a
// visitor still does through the tunnel.
func checkServingInCluster(t *testing.T, r *rig, gw types.NamespacedName, plane, tunnel string, visitor *http.Client) {
	t.Helper()
	ctx := t.Context()
	waitRolledOut(t, r.kube, gw.Namespace, plane, 3*time.Minute)
	var clusterIP string
	eventually(t, 60*time.Second, "the Gateway Programmed at its tunnel's address and its Service's", func() error {
		svc, err := r.kube.CoreV1().Services(gw.Namespace).Get(ctx, plane, metav1.GetOptions{})
		if err != nil {
			return err
		}
		clusterIP = svc.Spec.ClusterIP
		g, c, err := r.gatewayCondition(ctx, gw.Namespace, gw.Name, "Programmed")
		if err != nil {
			return err
		}
		var addrs []string
		for _, a := range g.Status.Addresses {
			addrs = append(addrs, a.Value)
		}
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "in the cluster") ||
			!slices.Equal(addrs, []string{tunnel + ".cfargotunnel.com", clusterIP}) {
			return fmt.Errorf("Programmed %+v, addresses %v; want the tunnel's, then %s", c, addrs, clusterIP)
		}
		return nil
	})
	var d net.Dialer
	inCluster := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", net.JoinHostPort(clusterIP, "80"))
		},
	}}
	defer inCluster.CloseIdleConnections()
	eventually(t, 60*time.Second, "the tenant's backend at its plane's Service and through its tunnel", func() error {
		if err := visitBackend(inCluster, "a.example.com", gw.Namespace); err != nil {
			return fmt.Errorf("in the cluster: %w", err)
		}
		return visitBackend(visitor, "a.example.com", gw.Namespace)
	})
}

// checkRelayedPlane: a Gateway whose plane is reached through the class's
// tunnel (classTunnel). Its hostname's record points at the class's
// tunnel, whose connectors are the shared proxies alone; a visitor's
// request goes through them and the plane's relay listener to the
// tenant's backend. The shared proxies' config holds a relay for it, with
// the plane's relay credentials, and never its route; the plane's holds
// the route.
func checkRelayedPlane(t *testing.T, r *rig, api *configAPIClient, sharedToken, classTunnel string) {
	ctx := t.Context()
	r.dumpPodsOnFailure(t, "team-r")
	r.apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: team-r}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: relayed, namespace: team-r}
spec: {dataPlane: Dedicated, replicas: 1, classTunnel: true}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: team-r}
spec:
  gatewayClassName: %s
  infrastructure:
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: relayed}
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "r.example.com"}]
`, r.class)+backend("team-r"))
	plane := provision.Name("gw", r.class)
	waitRolledOut(t, r.kube, "team-r", plane, 2*time.Minute)
	visitor := r.edge.Client(10 * time.Second)
	eventually(t, 90*time.Second, "the relayed Gateway Programmed at the class tunnel's address, and served", func() error {
		if err := r.conditionSays(ctx, "team-r", "gw", "Programmed", metav1.ConditionTrue, "", "relay them to the plane"); err != nil {
			return err
		}
		g, err := r.gw.GatewayV1().Gateways("team-r").Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(g.Status.Addresses) != 1 || g.Status.Addresses[0].Value != classTunnel+".cfargotunnel.com" {
			return fmt.Errorf("addresses %+v, want the class tunnel's", g.Status.Addresses)
		}
		if err := cnameTo(r, "r.example.com", classTunnel); err != nil {
			return err
		}
		return visitBackend(visitor, "r.example.com", "team-r")
	})
	for _, c := range r.edge.ConnectorsOf(classTunnel) {
		if !strings.HasPrefix(c, r.proxy()) {
			t.Errorf("connector %s of the class's tunnel: want the shared proxies' alone", c)
		}
	}
	d, err := r.kube.AppsV1().Deployments("team-r").Get(ctx, plane, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := d.Spec.Template.Spec.Containers; len(cs) != 1 || cs[0].Name != "proxy" || len(d.Spec.Template.Spec.InitContainers) != 0 {
		t.Errorf("the relayed plane's Pod runs %d containers (%+v); want the proxy alone", len(cs), cs)
	}

	sharedCfg := api.read(t, sharedToken)
	var relay *proxycfg.Route
	for i, rt := range sharedCfg.Routes {
		if rt.Namespace != "team-r" {
			continue
		}
		if rt.Name != "relay:gw" {
			t.Errorf("the shared config holds team-r's route %s", rt.Name)
		}
		relay = &sharedCfg.Routes[i]
	}
	if relay == nil || !slices.Equal(relay.Hostnames, []string{"r.example.com"}) {
		t.Fatalf("the shared config's relay of team-r: %+v", relay)
	}
	relayCA := secretKey(t, r.kube, "team-r", plane+"-credentials", provision.KeyRelayCA)
	for _, c := range sharedCfg.Clusters {
		if c.Name == relay.Rules[0].Backends[0].Cluster && (c.TLS == nil || c.TLS.CAPEM != relayCA || c.TLS.ClientKeyPEM == "" || len(c.Endpoints) != 1) {
			t.Errorf("relay cluster %s: %d endpoints, TLS %+v; want the plane's Pod and relay credentials", c.Name, len(c.Endpoints), c.TLS != nil)
		}
	}
	planeCfg := api.read(t, secretKey(t, r.kube, "team-r", plane+"-credentials", provision.KeyConfigToken))
	if !slices.ContainsFunc(planeCfg.Routes, func(rt proxycfg.Route) bool { return rt.Namespace == "team-r" && rt.Name == "web" }) {
		t.Errorf("the relayed plane's config lacks its route: %v", planeCfg.Routes)
	}
}

// setOwnPlane applies team-a's GatewayConfig "own" with its tunnel and
// size, a line of YAML under spec (replicas or autoscaling).
func setOwnPlane(t *testing.T, r *rig, size string) {
	t.Helper()
	if err := r.env.Apply(t.Context(), []byte(`
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: own, namespace: team-a}
spec:
  dataPlane: Dedicated
  tunnel: {name: team-a-tunnel}
  `+size+"\n")); err != nil {
		t.Fatal(err)
	}
}

// planeGateway is the YAML of a Gateway name in ns with one HTTP
// listener for hostname, and of its GatewayConfig, also name: a Dedicated
// plane of one replica with the tunnel of that name, and more, a line
// under spec.
func planeGateway(ns, name, class, tunnel, hostname, more string) string {
	return fmt.Sprintf(`
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  dataPlane: Dedicated
  replicas: 1
  tunnel: {%[4]s}
  %[6]s
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  gatewayClassName: %[3]s
  infrastructure:
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: %[2]s}
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: %[5]q}]
`, ns, name, class, tunnel, hostname, more)
}

// setOwnPlaneShared sends team-a's Gateway back to the shared proxies.
func setOwnPlaneShared(t *testing.T, r *rig) {
	t.Helper()
	if _, err := r.env.Dynamic().Resource(v1alpha1.SchemeGroupVersion.WithResource("gatewayconfigs")).Namespace("team-a").Patch(
		t.Context(), "own", types.MergePatchType, []byte(`{"spec":{"dataPlane":"Shared","tunnel":null,"replicas":null,"autoscaling":null,"serveInCluster":null}}`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// gone reports an error while an object of the plane is left: its
// Deployment and Service, and with secrets its credentials and tunnel
// token Secrets (which a Gateway back on the shared proxies keeps until
// the Gateway goes: the controller may not delete Secrets).
func gone(ctx context.Context, kube kubernetes.Interface, ns, plane string, secrets bool) error {
	gets := []func() error{
		func() error { _, err := kube.AppsV1().Deployments(ns).Get(ctx, plane, metav1.GetOptions{}); return err },
		func() error { _, err := kube.CoreV1().Services(ns).Get(ctx, plane, metav1.GetOptions{}); return err },
	}
	if secrets {
		for _, name := range []string{plane + "-credentials", plane + "-tunnel"} {
			gets = append(gets, func() error { _, err := kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); return err })
		}
	}
	for _, get := range gets {
		if err := get(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
	}
	return nil
}

// cnameTo checks that host's CNAME points at the tunnel.
func cnameTo(r *rig, host, tunnel string) error {
	for _, rec := range r.fake.Records("zone") {
		if rec.Name == host && rec.Type == "CNAME" {
			if rec.Content != tunnel+".cfargotunnel.com" {
				return fmt.Errorf("%s → %s, want tunnel %s", host, rec.Content, tunnel)
			}
			return nil
		}
	}
	return fmt.Errorf("no CNAME for %s", host)
}

// backend is an echo app (echoApp) and an HTTPRoute for <the last letter
// of ns>.example.com on the Gateway gw of ns.
func backend(ns string) string {
	host := ns[len(ns)-1:] + ".example.com"
	return echoApp(ns, 1) + "\n---\n" + webRoute(ns, host)
}

// visitBackend is a visitor's request for host, answered by a Pod of the
// app Deployment in ns.
func visitBackend(c *http.Client, host, ns string) error {
	echo, err := visitEcho(c, "http://"+host+"/visit")
	if err == nil && echo.Namespace != ns {
		err = fmt.Errorf("%s: answered from namespace %q, want %s", host, echo.Namespace, ns)
	}
	return err
}

func gatewayUID(t *testing.T, r *rig, key types.NamespacedName) types.UID {
	t.Helper()
	g, err := r.gw.GatewayV1().Gateways(key.Namespace).Get(t.Context(), key.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g.UID
}

func patchGateway(t *testing.T, r *rig, key types.NamespacedName, patch string) {
	t.Helper()
	if _, err := r.gw.GatewayV1().Gateways(key.Namespace).Patch(t.Context(), key.Name, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// planeObjects reports an error until every object of the plane exists
// and is controlled by the Gateway, and returns its Deployment. The
// Deployment rolled out says nothing of the objects applied after it
// (the PodDisruptionBudget, the NetworkPolicy), which a failed request to
// the API server leaves to the next attempt, so callers wait for this.
func planeObjects(ctx context.Context, kube kubernetes.Interface, gw types.NamespacedName, plane string, uid types.UID) (*appsv1.Deployment, error) {
	ns := gw.Namespace
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, plane, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	metas := []metav1.Object{d}
	for _, get := range []func() (metav1.Object, error){
		func() (metav1.Object, error) { return kube.CoreV1().Services(ns).Get(ctx, plane, metav1.GetOptions{}) },
		func() (metav1.Object, error) {
			return kube.CoreV1().ServiceAccounts(ns).Get(ctx, plane, metav1.GetOptions{})
		},
		func() (metav1.Object, error) {
			return kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, plane, metav1.GetOptions{})
		},
		func() (metav1.Object, error) {
			return kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, plane, metav1.GetOptions{})
		},
		func() (metav1.Object, error) {
			return kube.CoreV1().Secrets(ns).Get(ctx, plane+"-credentials", metav1.GetOptions{})
		},
		func() (metav1.Object, error) {
			return kube.CoreV1().Secrets(ns).Get(ctx, plane+"-tunnel", metav1.GetOptions{})
		},
	} {
		o, err := get()
		if err != nil {
			return nil, err
		}
		metas = append(metas, o)
	}
	for _, o := range metas {
		c := metav1.GetControllerOf(o)
		if c == nil || c.Kind != "Gateway" || c.Name != gw.Name || c.UID != uid {
			return nil, fmt.Errorf("%s: controller %+v, want the Gateway %s", o.GetName(), c, gw)
		}
	}
	return d, nil
}

func wantReplicas(ctx context.Context, kube kubernetes.Interface, ns, name string, want int32) error {
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if *d.Spec.Replicas != want {
		return fmt.Errorf("replicas %d, want %d", *d.Spec.Replicas, want)
	}
	return nil
}

// tunnelID is the ID of the account's tunnel of that name.
func tunnelID(t *testing.T, r *rig, name string) string {
	t.Helper()
	for _, tun := range r.fake.Tunnels(rigAccount) {
		if tun.Name == name && tun.DeletedAt.IsZero() {
			return tun.ID
		}
	}
	t.Fatalf("no tunnel %q in the account", name)
	return ""
}

func secretKey(t *testing.T, kube kubernetes.Interface, ns, name, key string) string {
	t.Helper()
	s, err := kube.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Data[key]) == 0 {
		t.Fatalf("Secret %s/%s has no %s", ns, name, key)
	}
	return string(s.Data[key])
}

func listenerNames(cfg *proxycfg.Config) []string {
	var out []string
	for _, l := range cfg.Listeners {
		out = append(out, l.Name)
	}
	return out
}

// configAPIClient reads the config API of a ready controller Pod as a
// proxy does: over TLS checked against the chart's internal CA. Every
// replica serves it; each request goes to a Pod ready at that moment, as
// the Service would send it, so a replica that stalls under load (its
// readiness probe fails) is not asked again.
type configAPIClient struct {
	r *rig
	c *http.Client
}

func configAPI(t *testing.T, r *rig) *configAPIClient {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(secretKey(t, r.kube, r.ns, r.class+"-tunnelgate-internal", "ca.crt"))) {
		t.Fatal("the internal CA does not parse")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		ServerName: r.controller() + "." + r.ns + ".svc"}}
	t.Cleanup(tr.CloseIdleConnections)
	return &configAPIClient{r: r, c: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// readyPodIP is the address of a ready controller Pod.
func (a *configAPIClient) readyPodIP(t *testing.T) (string, error) {
	pods, err := a.r.kube.CoreV1().Pods(a.r.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller"})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		})
		if ready && p.Status.PodIP != "" {
			return p.Status.PodIP, nil
		}
	}
	return "", fmt.Errorf("no controller Pod ready among %d", len(pods.Items))
}

// get asks a ready controller Pod for the config with token, once.
func (a *configAPIClient) get(t *testing.T, token string) (*http.Response, []byte, error) {
	t.Helper()
	ip, err := a.readyPodIP(t)
	if err != nil {
		return nil, nil, err
	}
	url := "https://" + net.JoinHostPort(ip, "8081") + "/v1/config?wait=0s"
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := a.c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

// read is the config token reads. A token just written may wait for the
// controller's informer (as a proxy's first request would, and retry), so
// a refusal is retried for a few seconds, and logged.
func (a *configAPIClient) read(t *testing.T, token string) *proxycfg.Config {
	t.Helper()
	var b []byte
	refused := 0
	eventually(t, 30*time.Second, "the config API to answer the token", func() error {
		res, body, err := a.get(t, token)
		if err != nil {
			return err
		}
		b = body
		if res.StatusCode != http.StatusOK {
			if refused++; refused == 1 {
				t.Logf("config API: %s at %s: %.200s", res.Status, time.Now().Format(time.StampMilli), b)
			}
			return fmt.Errorf("%s: %.200s", res.Status, b)
		}
		return nil
	})
	if refused > 0 {
		t.Logf("config API: the token was answered after %d refusals", refused)
	}
	doc, err := configwatch.DecodeDocument(b)
	if err != nil {
		t.Fatalf("config API: %v", err)
	}
	return &doc.Config
}

// status is the HTTP status the config API answers token with.
func (a *configAPIClient) status(t *testing.T, token string) int {
	t.Helper()
	var code int
	eventually(t, 30*time.Second, "the config API to answer", func() error {
		res, _, err := a.get(t, token)
		if err != nil {
			return err
		}
		code = res.StatusCode
		return nil
	})
	return code
}

// ingressHostnames are the hostnames a tunnel's ingress document routes.
func ingressHostnames(t *testing.T, r *rig, tunnel string) []string {
	t.Helper()
	raw, _ := r.fake.TunnelConfig(rigAccount, tunnel)
	var doc struct {
		Ingress []struct{ Hostname string } `json:"ingress"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("tunnel %s configuration %s: %v", tunnel, raw, err)
	}
	var out []string
	for _, rule := range doc.Ingress {
		if rule.Hostname != "" {
			out = append(out, rule.Hostname)
		}
	}
	return out
}
