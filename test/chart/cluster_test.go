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
	"github.com/tunnelgate/tunnelgate/test/netns"
	"github.com/tunnelgate/tunnelgate/test/realnode"
)

// One control plane for the package, with the Gateway API CRDs and ours
// (kubeenv installs them) and kube-controller-manager, and one real node
// (test/realnode) that runs the Pods of the releases the tests install.
// Both start when a test first asks for them.
var shared = realnode.NewShared(kubeenv.Options{}, realnode.Options{})

// The tests run in a network namespace of their own (test/netns), where
// the node puts its devices, routes and iptables rules.
func TestMain(m *testing.M) {
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
	env, _ := shared.Node(t)
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
		{"GatewayClassConfig", "tunnelgate", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "720h", "spec", "tunnel", "credentialRotation", "interval")
		}, "credentialRotation needs tokenSecretRef"},
		{"GatewayClassConfig", "tunnelgate", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"namespace": "ns", "name": "token"}, "spec", "tunnel", "tokenSecretRef")
			_ = unstructured.SetNestedField(u.Object, "30m", "spec", "tunnel", "credentialRotation", "interval")
		}, "interval must be a duration of at least 1h"},
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
	// The rotation's own checks pass what is right.
	u := find(t, objs, "GatewayClassConfig", "tunnelgate").DeepCopy()
	_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"namespace": "ns", "name": "token"}, "spec", "tunnel", "tokenSecretRef")
	_ = unstructured.SetNestedField(u.Object, "720h", "spec", "tunnel", "credentialRotation", "interval")
	if err := dryRunApply(t.Context(), env, u); err != nil {
		t.Errorf("a credentialRotation of 720h with a tokenSecretRef refused: %v", err)
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

// helm install, upgrade and uninstall on the real node, with the image
// built from this commit: after the install both Deployments' Pods run
// and are Ready, and both proxy Pods' cloudflared connect to the edge;
// the generated internal Secret and a rotation of the session keys
// survive an upgrade to three proxies (pods keep trusting each other,
// pinned clients keep their backend), whose three Pods run; uninstall
// removes the Pods and leaves the GatewayClass and its config, which
// Gateways may still use.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	r := newRig(t, "edge")
	r.dumpPodsOnFailure(t, r.ns)
	ctx := t.Context()
	dyn := r.env.Dynamic()
	out, err := r.install(t)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kubectl get gatewayclass "+r.class) {
		t.Errorf("NOTES.txt does not tell how to check the GatewayClass:\n%s", out)
	}
	for _, d := range []string{r.controller(), r.proxy()} {
		got, err := r.kube.AppsV1().Deployments(r.ns).Get(ctx, d, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after install: %v", err)
		}
		if got.Spec.Replicas == nil || *got.Spec.Replicas != 2 {
			t.Errorf("%s has %v replicas, want the default 2", d, got.Spec.Replicas)
		}
		waitRolledOut(t, r.kube, r.ns, d, 3*time.Minute)
	}
	eventually(t, time.Minute, "both proxy Pods connected to the edge", func() error {
		return connectorsOf(r, r.proxy(), 2)
	})
	internal, err := dyn.Resource(gvrSecret).Namespace(r.ns).Get(ctx, r.name+"-tunnelgate-internal", metav1.GetOptions{})
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
	if _, err := dyn.Resource(gvrSecret).Namespace(r.ns).Patch(ctx, r.name+"-tunnelgate-session-keys", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("rotating the session keys: %v", err)
	}

	if _, err := r.helm(t, append([]string{"upgrade", r.name, chartDir, "--namespace", r.ns}, r.values("proxy.replicas=3")...)...); err != nil {
		t.Fatal(err)
	}
	got, err := r.kube.AppsV1().Deployments(r.ns).Get(ctx, r.proxy(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 3 {
		t.Errorf("after the upgrade the proxies have %v replicas, want 3", got.Spec.Replicas)
	}
	waitRolledOut(t, r.kube, r.ns, r.proxy(), 3*time.Minute)
	eventually(t, time.Minute, "three proxy Pods connected to the edge", func() error {
		return connectorsOf(r, r.proxy(), 3)
	})
	internal, err = dyn.Resource(gvrSecret).Namespace(r.ns).Get(ctx, r.name+"-tunnelgate-internal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, _, _ := unstructured.NestedStringMap(internal.Object, "data")
	for k, v := range before {
		if after[k] != v {
			t.Errorf("the upgrade replaced %s in the internal Secret: running pods would stop trusting new ones", k)
		}
	}
	keys, err := dyn.Resource(gvrSecret).Namespace(r.ns).Get(ctx, r.name+"-tunnelgate-session-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedStringMap(keys.Object, "data"); !maps.Equal(data, map[string]string{
		"previous": rotated["data"].(map[string]any)["previous"].(string),
		"current":  rotated["data"].(map[string]any)["current"].(string),
	}) {
		t.Errorf("after the upgrade the session keys are %v; want the rotation made before it kept", data)
	}

	if _, err := r.helm(t, "uninstall", r.name, "--namespace", r.ns); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gvr        schema.GroupVersionResource
		ns, name   string
		shouldStay bool
	}{
		{gvrDeployment, r.ns, r.proxy(), false},
		{gvrSecret, r.ns, r.name + "-tunnelgate-internal", false},
		{gvrSecret, r.ns, r.name + "-tunnelgate-session-keys", false},
		{gvrClusterRole, "", r.controller(), false},
		{gvrGatewayClass, "", r.class, true},
		{gvrClassConfig, "", r.class, true},
	} {
		_, err := dyn.Resource(c.gvr).Namespace(c.ns).Get(ctx, c.name, metav1.GetOptions{})
		switch {
		case c.shouldStay && err != nil:
			t.Errorf("after uninstall %s %s is gone (%v); it is kept on purpose", c.gvr.Resource, c.name, err)
		case !c.shouldStay && !apierrors.IsNotFound(err):
			t.Errorf("after uninstall %s %s: %v, want it deleted", c.gvr.Resource, c.name, err)
		}
	}
	eventually(t, 2*time.Minute, "the release's Pods gone", func() error {
		pods, err := r.kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if n := len(pods.Items); n > 0 {
			return fmt.Errorf("%d Pods left", n)
		}
		return nil
	})
}

// connectorsOf checks that the edge has exactly n connectors, each of a
// Pod of the Deployment deployment.
func connectorsOf(r *rig, deployment string, n int) error {
	cs := r.edge.Connectors()
	if len(cs) != n {
		return fmt.Errorf("%d connectors registered (%v), want %d", len(cs), cs, n)
	}
	for _, c := range cs {
		if !strings.HasPrefix(c, deployment+"-") {
			return fmt.Errorf("connector %s is not a Pod of %s", c, deployment)
		}
	}
	return nil
}
