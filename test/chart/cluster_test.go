package chart

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// One control plane for the package, with the Gateway API CRDs and ours
// (kubeenv installs them). No controller manager: TestChartRunsEndToEnd
// runs the pods itself.
var shared = kubeenv.NewShared(kubeenv.Options{})

// The tests run in a network namespace of their own (test/netns), where
// backends may listen on addresses an EndpointSlice accepts.
func TestMain(m *testing.M) {
	kubelet.RunIfContainer() // in a Pod of TestRolloutsLoseNoRequest: run its program
	netns.Run(func() int {
		code := shared.Run(m)
		if binary.dir != "" {
			os.RemoveAll(binary.dir)
		}
		return code
	})
}

// clusterEnv returns the shared Env with what every render may refer to:
// the release namespace and the ServiceMonitor and PrometheusRule CRDs.
func clusterEnv(t *testing.T) *kubeenv.Env {
	t.Helper()
	env := shared.Env(t)
	docs := []byte(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", releaseNS))
	for _, f := range []string{serviceMonitorCRD, prometheusRuleCRD} {
		crd, err := os.ReadFile(filepath.Join(toolsDir(t), f))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(append(docs, "---\n"...), crd...)
	}
	if err := env.Apply(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	return env
}

// Every object of every render, and the chart's CRDs, pass the API
// server's validation: server-side apply with dry-run, so nothing is
// stored, and strict field validation, so a misspelt or misplaced field
// fails instead of being dropped.
func TestRendersPassServerSideDryRun(t *testing.T) {
	env := clusterEnv(t)
	files := valuesFiles(t)
	for _, name := range sortedNames(files) {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, mustRender(t, files[name]))
			crds, _ := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
			for _, f := range crds {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				objs = append(objs, decode(t, string(b))...)
			}
			if len(objs) < 10 {
				t.Fatalf("only %d objects rendered", len(objs))
			}
			for _, o := range objs {
				if err := dryRunApply(t.Context(), env, o); err != nil {
					t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
		})
	}
}

// The dry run must refuse what is wrong, or the test above proves nothing.
func TestServerSideDryRunRefusesBadFields(t *testing.T) {
	env := clusterEnv(t)
	objs := decode(t, mustRender(t, valuesFiles(t)["default"]))
	objs = append(objs, find(t, decode(t, mustRender(t, valuesFiles(t)["ha"])), "PrometheusRule", "tunnelgate"))
	for _, c := range []struct {
		kind, suffix string
		spoil        func(u *unstructured.Unstructured)
		want         string
	}{
		{"Deployment", "-proxy", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "yes", "spec", "template", "spec", "automountServiceAccountToken")
		}, "automountServiceAccountToken"},
		{"Deployment", "-controller", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "template", "spec", "replicas")
		}, ".spec.template.spec.replicas: field not declared in schema"},
		{"GatewayClassConfig", "tunnelgate", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "yes", "spec", "dns", "enabled")
		}, "spec.dns.enabled"},
		{"PrometheusRule", "tunnelgate", func(u *unstructured.Unstructured) {
			groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
			rule := groups[0].(map[string]any)["rules"].([]any)[0].(map[string]any)
			rule["for"] = "soon"
			_ = unstructured.SetNestedSlice(u.Object, groups, "spec", "groups")
		}, "spec.groups[0].rules[0].for"},
	} {
		u := find(t, objs, c.kind, c.suffix).DeepCopy()
		c.spoil(u)
		err := dryRunApply(t.Context(), env, u)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s spoilt: got %v, want an error about %s", c.kind, u.GetName(), err, c.want)
		}
	}
}

// dryRunApply server-side applies u without storing it.
func dryRunApply(ctx context.Context, env *kubeenv.Env, u *unstructured.Unstructured) error {
	ri, err := resource(env, u)
	if err != nil {
		return err
	}
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
		FieldManager: "chart-check", Force: &force,
		DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict",
	})
	return err
}

// resource is the client for u's kind and namespace.
func resource(env *kubeenv.Env, u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	var m *meta.RESTMapping
	var err error
	for range 30 { // a CRD applied a moment ago may not be in discovery yet
		if m, err = env.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			break
		}
		env.RESTMapper().Reset()
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			return nil, errors.New("a namespaced object without a namespace: the chart must set metadata.namespace")
		}
		return env.Dynamic().Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return env.Dynamic().Resource(m.Resource), nil
}

var (
	gvrDeployment   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrSecret       = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrGatewayClass = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	gvrGateway      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	gvrClassConfig  = schema.GroupVersionResource{Group: "tunnelgate.dev", Version: "v1alpha1", Resource: "gatewayclassconfigs"}
	gvrClusterRole  = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

// helm install, upgrade and uninstall against the real API server: the
// generated internal Secret survives an upgrade (pods keep trusting each
// other), and uninstall leaves the GatewayClass and its config, which
// Gateways may still use.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	env := clusterEnv(t)
	ctx := t.Context()
	kubeconfig := []string{"KUBECONFIG=" + env.Kubeconfig()}
	const release, ns, class = "edge", "edge-system", "edge"
	values := valuesFiles(t)["default"]
	base := []string{"--namespace", ns, "-f", values, "--set", "gatewayClass.name=" + class}
	dyn := env.Dynamic()

	out, err := helm(t, kubeconfig, append([]string{"install", release, chartDir, "--create-namespace"}, base...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kubectl get gatewayclass "+class) {
		t.Errorf("NOTES.txt does not tell how to check the GatewayClass:\n%s", out)
	}
	for _, d := range []string{"edge-tunnelgate-controller", "edge-tunnelgate-proxy"} {
		got, err := dyn.Resource(gvrDeployment).Namespace(ns).Get(ctx, d, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after install: %v", err)
		}
		if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 2 {
			t.Errorf("%s has %d replicas, want the default 2", d, r)
		}
	}
	internal, err := dyn.Resource(gvrSecret).Namespace(ns).Get(ctx, "edge-tunnelgate-internal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, _, _ := unstructured.NestedStringMap(internal.Object, "data")
	if len(before) != 6 {
		t.Fatalf("the internal Secret holds %d keys, want 6", len(before))
	}

	// A rotation of the session keys, made with kubectl, as docs/install.md
	// says: the upgrade must keep it.
	rotated := map[string]any{"data": map[string]any{
		"previous": base64.StdEncoding.EncodeToString([]byte("the first key 0123456789abcdef")),
		"current":  base64.StdEncoding.EncodeToString([]byte("the second key 0123456789abcdef")),
	}}
	patch, _ := json.Marshal(rotated)
	if _, err := dyn.Resource(gvrSecret).Namespace(ns).Patch(ctx, "edge-tunnelgate-session-keys", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("rotating the session keys: %v", err)
	}

	if _, err := helm(t, kubeconfig, append([]string{"upgrade", release, chartDir, "--set", "proxy.replicas=3"}, base...)...); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(gvrDeployment).Namespace(ns).Get(ctx, "edge-tunnelgate-proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 3 {
		t.Errorf("after the upgrade the proxies have %d replicas, want 3", r)
	}
	internal, err = dyn.Resource(gvrSecret).Namespace(ns).Get(ctx, "edge-tunnelgate-internal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, _, _ := unstructured.NestedStringMap(internal.Object, "data")
	for k, v := range before {
		if after[k] != v {
			t.Errorf("the upgrade replaced %s in the internal Secret: running pods would stop trusting new ones", k)
		}
	}
	keys, err := dyn.Resource(gvrSecret).Namespace(ns).Get(ctx, "edge-tunnelgate-session-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedStringMap(keys.Object, "data"); !maps.Equal(data, map[string]string{
		"previous": rotated["data"].(map[string]any)["previous"].(string),
		"current":  rotated["data"].(map[string]any)["current"].(string),
	}) {
		t.Errorf("after the upgrade the session keys are %v; want the rotation made before it kept", data)
	}

	if _, err := helm(t, kubeconfig, "uninstall", release, "--namespace", ns); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gvr        schema.GroupVersionResource
		ns, name   string
		shouldStay bool
	}{
		{gvrDeployment, ns, "edge-tunnelgate-proxy", false},
		{gvrSecret, ns, "edge-tunnelgate-internal", false},
		{gvrSecret, ns, "edge-tunnelgate-session-keys", false},
		{gvrClusterRole, "", "edge-tunnelgate-controller", false},
		{gvrGatewayClass, "", class, true},
		{gvrClassConfig, "", class, true},
	} {
		_, err := dyn.Resource(c.gvr).Namespace(c.ns).Get(ctx, c.name, metav1.GetOptions{})
		switch {
		case c.shouldStay && err != nil:
			t.Errorf("after uninstall %s %s is gone (%v); it is kept on purpose", c.gvr.Resource, c.name, err)
		case !c.shouldStay && !apierrors.IsNotFound(err):
			t.Errorf("after uninstall %s %s: %v, want it deleted", c.gvr.Resource, c.name, err)
		}
	}
}
