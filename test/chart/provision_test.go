package chart

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// A Gateway's dedicated data plane (ctrl/provision) has the chart's proxy
// Pod shape: rendered from the settings the chart gives the controller
// (-planes), its Pod spec equals the chart's proxy Pod spec in everything
// but what names the plane (its ServiceAccount, Secrets and selector
// labels). A probe, security setting, argument, mount or volume changed
// in one and not the other fails here, and so does a setting the chart
// writes for planes that differs from its own proxies'.
//
// One difference is the origin port: both listen for cloudflared on
// loopback TCP, a plane with a tunnel of its own on provision.OriginPort
// rather than the chart's 8080, which it leaves free for the Gateway's
// listener ports (v1alpha1's GatewayConfigSpec.PortHolder).
func TestProvisionedPlaneHasTheChartsPodShape(t *testing.T) {
	objs := decode(t, mustRender(t, valuesFiles(t)["default"]))
	chart := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-proxy")).Spec.Template.Spec
	settings := typed[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "-planes")).Data["planes.json"]
	install, err := provision.ParseInstall([]byte(settings))
	if err != nil {
		t.Fatalf("the chart's planes.json: %v", err)
	}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "team-a", UID: "u"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "tunnelgate"}}
	dedicated := v1alpha1.GatewayConfigSpec{DataPlane: v1alpha1.DataPlaneDedicated, Tunnel: &v1alpha1.GatewayTunnel{Name: "tenant"}}
	planeObjs, err := provision.Objects(provision.Plane{Gateway: gw, Install: install,
		Params: dedicated, Secrets: provision.SecretsOf(gw, &dedicated)})
	if err != nil {
		t.Fatal(err)
	}
	var plane corev1.PodSpec
	for _, o := range planeObjs {
		if d, ok := o.(*appsv1.Deployment); ok {
			plane = d.Spec.Template.Spec
		}
	}
	if plane.InitContainers == nil {
		t.Fatal("the plane has no Deployment")
	}

	// What names the plane differs by design, and so does where the TLS
	// origin certificate comes from: the chart's proxies share one signed
	// by the internal CA, a plane's proxy makes its own (-cert-dir), since
	// the controller holds no CA key.
	dropOriginCert(&chart, &plane)
	planeListen := "-listen=127.0.0.1:" + strconv.Itoa(provision.OriginPort)
	for i, a := range plane.InitContainers[0].Args {
		if a == planeListen {
			plane.InitContainers[0].Args[i] = "-listen=127.0.0.1:8080"
		}
	}
	for _, pod := range []*corev1.PodSpec{&chart, &plane} {
		pod.ServiceAccountName = ""
		for i := range pod.TopologySpreadConstraints {
			pod.TopologySpreadConstraints[i].LabelSelector = nil
		}
		for i := range pod.Volumes {
			if s := pod.Volumes[i].Secret; s != nil {
				s.SecretName = ""
			}
		}
	}
	a, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&chart)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&plane)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		for _, k := range sortedKeys(a, b) {
			if !reflect.DeepEqual(a[k], b[k]) {
				t.Errorf("pod spec %s:\n chart %v\n plane %v", k, a[k], b[k])
			}
		}
	}

	// Every object of a plane, autoscaled with every setting too, passes
	// the API server's strict validation (server-side dry-run).
	env := clusterEnv(t)
	gw.Namespace = releaseNS
	gw.Spec.Infrastructure = &gwv1.GatewayInfrastructure{
		Labels:      map[gwv1.LabelKey]gwv1.LabelValue{"team": "a"},
		Annotations: map[gwv1.AnnotationKey]gwv1.AnnotationValue{"example.com/owner": "a"},
	}
	for _, params := range []v1alpha1.GatewayConfigSpec{
		{DataPlane: v1alpha1.DataPlaneDedicated},
		{DataPlane: v1alpha1.DataPlaneDedicated, Autoscaling: &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 5},
			Proxy:     &v1alpha1.ContainerSettings{Image: "registry.example.com/tunnelgate:1", Resources: &install.CloudflaredResources},
			ProxyArgs: []string{"-log-level=debug"}},
	} {
		p := provision.Plane{Gateway: gw, Install: install, Params: params, Secrets: provision.SecretsOf(gw, &params)}
		objs, err := provision.Objects(p)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, provision.CredentialsSecret(p, "token", []byte("-----BEGIN CERTIFICATE-----")))
		for _, o := range objs {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			delete(m, "status")
			u := &unstructured.Unstructured{Object: m}
			if err := dryRunApply(t.Context(), env, u); err != nil {
				t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
}

func sortedKeys(ms ...map[string]any) []string {
	keys := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			keys[k] = true
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

// dropOriginCert takes out of both Pod specs what carries the TLS origin
// certificate: the chart's -tls-cert and -tls-key, its Secret items and
// its origin-ca volume; the plane's -cert-dir and its origin-certs volume.
func dropOriginCert(pods ...*corev1.PodSpec) {
	certVolume := func(name string) bool { return name == "origin-ca" || name == "origin-certs" }
	for _, pod := range pods {
		for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
			for i := range cs {
				c := &cs[i]
				c.Args = slices.DeleteFunc(c.Args, func(a string) bool {
					return strings.HasPrefix(a, "-tls-cert=") || strings.HasPrefix(a, "-tls-key=") || strings.HasPrefix(a, "-cert-dir=")
				})
				c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return certVolume(m.Name) })
			}
		}
		pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return certVolume(v.Name) })
		for i := range pod.Volumes {
			if s := pod.Volumes[i].Secret; s != nil {
				s.Items = slices.DeleteFunc(s.Items, func(k corev1.KeyToPath) bool { return k.Key == "origin.crt" || k.Key == "origin.key" })
			}
		}
	}
}

// The chart's NetworkPolicy lets a dedicated plane's proxies, in any
// namespace, reach the config API: a peer of the config API's rule selects
// the plane's Pod labels in every namespace.
func TestNetworkPolicyAdmitsPlanes(t *testing.T) {
	objs := decode(t, mustRender(t, valuesFiles(t)["default"]))
	var np struct {
		Spec struct {
			Ingress []struct {
				Ports []struct{ Port int }
				From  []struct {
					NamespaceSelector *metav1.LabelSelector
					PodSelector       *metav1.LabelSelector
				}
			}
		}
	}
	b, _ := json.Marshal(find(t, objs, "NetworkPolicy", "-controller").Object)
	if err := json.Unmarshal(b, &np); err != nil {
		t.Fatal(err)
	}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "team-a", UID: "u"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "tunnelgate"}}
	params := v1alpha1.GatewayConfigSpec{DataPlane: v1alpha1.DataPlaneDedicated}
	planeObjs, err := provision.Objects(provision.Plane{Gateway: gw, Params: params, Secrets: provision.SecretsOf(gw, &params),
		Install: provision.Install{TunnelProtocol: "http2", GracePeriod: "30s"}})
	if err != nil {
		t.Fatal(err)
	}
	var podLabels map[string]string
	for _, o := range planeObjs {
		if d, ok := o.(*appsv1.Deployment); ok {
			podLabels = d.Spec.Template.Labels
		}
	}
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) != 1 || rule.Ports[0].Port != 8081 {
			continue
		}
		for _, peer := range rule.From {
			if peer.NamespaceSelector == nil || len(peer.NamespaceSelector.MatchLabels)+len(peer.NamespaceSelector.MatchExpressions) > 0 || peer.PodSelector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err == nil && sel.Matches(labels.Set(podLabels)) {
				return
			}
		}
	}
	t.Errorf("no peer of the config API's rule admits a plane's Pods (labels %v): %+v", podLabels, np.Spec.Ingress)
}
