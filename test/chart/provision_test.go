package chart

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// A Gateway's dedicated data plane (ctrl/provision) has the chart's proxy
// Pod shape: rendered from the same images, config API, protocol, grace
// period and resources, its Pod spec equals the chart's proxy Pod spec in
// everything but what names the plane (its ServiceAccount, Secrets and
// selector labels). A probe, security setting, argument, mount or volume
// changed in one and not the other fails here.
func TestProvisionedPlaneHasTheChartsPodShape(t *testing.T) {
	objs := decode(t, mustRender(t, valuesFiles(t)["default"]))
	chart := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-proxy")).Spec.Template.Spec
	proxy, cfd := chart.InitContainers[0], chart.Containers[0]
	install := provision.Install{
		ProxyImage:                    proxy.Image,
		CloudflaredImage:              cfd.Image,
		ControllerURL:                 flags(proxy.Args)["-controller"],
		TunnelProtocol:                flags(proxy.Args)["-tunnel-protocol"],
		GracePeriod:                   cfdFlag(cfd.Args, "--grace-period"),
		TerminationGracePeriodSeconds: *chart.TerminationGracePeriodSeconds,
		ProxyResources:                v1alpha1.ContainerResources{Requests: proxy.Resources.Requests, Limits: proxy.Resources.Limits},
		CloudflaredResources:          v1alpha1.ContainerResources{Requests: cfd.Resources.Requests, Limits: cfd.Resources.Limits},
	}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "team-a", UID: "u"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "tunnelgate"}}
	planeObjs, err := provision.Objects(provision.Plane{Gateway: gw, Install: install,
		Params:  v1alpha1.GatewayConfigSpec{DataPlane: v1alpha1.DataPlaneDedicated},
		Secrets: provision.Secrets{Credentials: "tenant-credentials", TunnelToken: "tenant-tunnel", TunnelTokenKey: "token"}})
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

	// What names the plane differs by design.
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
		objs, err := provision.Objects(provision.Plane{Gateway: gw, Install: install, Params: params,
			Secrets: provision.Secrets{Credentials: "tenant-credentials", TunnelToken: "tenant-tunnel", TunnelTokenKey: "token"}})
		if err != nil {
			t.Fatal(err)
		}
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
