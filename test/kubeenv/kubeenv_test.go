package kubeenv

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// shared serves the tests of this file: etcd and kube-apiserver with every
// CRD, no controller manager.
var shared = NewShared(Options{})

func TestMain(m *testing.M) { shared.Main(m) }

var (
	gvrHTTPRoute          = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	gvrGatewayClassConfig = schema.GroupVersionResource{Group: "tunnelgate.dev", Version: "v1alpha1", Resource: "gatewayclassconfigs"}
	gvrExternalBackend    = schema.GroupVersionResource{Group: "tunnelgate.dev", Version: "v1alpha1", Resource: "externalbackends"}
	gvrGatewayConfig      = schema.GroupVersionResource{Group: "tunnelgate.dev", Version: "v1alpha1", Resource: "gatewayconfigs"}
)

// mustReject applies doc and wants the server to call it invalid, with a
// message containing want.
func mustReject(t *testing.T, env *Env, doc, want string) {
	t.Helper()
	err := env.Apply(t.Context(), []byte(doc))
	if err == nil {
		t.Fatalf("applied, want rejection with %q", want)
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want Invalid with %q", err, want)
	}
}

func TestGatewayAPICRDsInstalled(t *testing.T) {
	env := shared.Env(t)
	crd, err := env.Dynamic().Resource(gvrCRD).Get(t.Context(), "httproutes.gateway.networking.k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ann := crd.GetAnnotations()
	if ann["gateway.networking.k8s.io/bundle-version"] != "v1.7.0" || ann["gateway.networking.k8s.io/channel"] != "experimental" {
		t.Errorf("HTTPRoute CRD annotations %v, want bundle v1.7.0, channel experimental", ann)
	}
	for _, name := range []string{"listenersets", "backendtlspolicies", "grpcroutes", "tcproutes", "tlsroutes", "referencegrants"} {
		if _, err := env.Dynamic().Resource(gvrCRD).Get(t.Context(), name+".gateway.networking.k8s.io", metav1.GetOptions{}); err != nil {
			t.Errorf("CRD %s: %v", name, err)
		}
	}
}

func TestHTTPRouteCELValidation(t *testing.T) {
	env := shared.Env(t)
	const valid = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ok}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    backendRefs: [{name: svc, port: 80}]
`
	if err := env.Apply(t.Context(), []byte(valid)); err != nil {
		t.Fatalf("valid HTTPRoute: %v", err)
	}
	if _, err := env.Dynamic().Resource(gvrHTTPRoute).Namespace("default").Get(t.Context(), "ok", metav1.GetOptions{}); err != nil {
		t.Fatalf("get applied HTTPRoute: %v", err)
	}
	// Both rules are x-kubernetes-validations (CEL), not OpenAPI patterns.
	mustReject(t, env, strings.Replace(valid, "port: 80", "weight: 1", 1), "Must have port for Service reference")
	mustReject(t, env, strings.Replace(valid, "value: /api", "value: api", 1), "must be an absolute path")
}

func TestGatewayClassConfig(t *testing.T) {
	env := shared.Env(t)
	const valid = `
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayClassConfig
metadata: {name: cloudflare}
spec:
  credentialsRef: {namespace: tunnelgate, name: cloudflare-token}
  accountID: 0123456789abcdef0123456789abcdef
  tunnel: {name: my-tunnel}
  dns: {enabled: true, zones: [example.com]}
  origin: {}
`
	if err := env.Apply(t.Context(), []byte(valid)); err != nil {
		t.Fatalf("valid GatewayClassConfig: %v", err)
	}
	got, err := env.Dynamic().Resource(gvrGatewayClassConfig).Get(t.Context(), "cloudflare", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetNamespace() != "" {
		t.Errorf("namespace %q: GatewayClassConfig must be cluster-scoped", got.GetNamespace())
	}
	spec := got.Object["spec"].(map[string]any)
	for path, want := range map[string]any{
		"credentialsRef.key": "token",
		"dns.proxied":        true,
		"dns.takeover":       false,
		"origin.port":        int64(8080),
		"origin.tlsPort":     int64(8443),
	} {
		parent, field, _ := strings.Cut(path, ".")
		if v := spec[parent].(map[string]any)[field]; v != want {
			t.Errorf("default of %s: %v (%T), want %v", path, v, v, want)
		}
	}

	for _, tc := range []struct{ name, from, to, want string }{
		{"tunnel id and name", "{name: my-tunnel}", "{name: my-tunnel, id: 6ff42ae2-765d-4adf-8112-31c55c1551ef}", "set exactly one of id"},
		{"tunnel empty", "{name: my-tunnel}", "{}", "set exactly one of id"},
		{"same origin ports", "origin: {}", "origin: {port: 8443}", "port and tlsPort must differ"},
		{"port out of range", "origin: {}", "origin: {port: 70000}", "65535"},
		{"bad secret name", "name: cloudflare-token}", "name: Cloudflare_Token}", "spec.credentialsRef.name"},
		{"no secret namespace", "{namespace: tunnelgate, name: cloudflare-token}", "{name: cloudflare-token}", "spec.credentialsRef.namespace: Required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(strings.Replace(valid, "name: cloudflare}", "name: bad}", 1), tc.from, tc.to, 1)
			mustReject(t, env, doc, tc.want)
		})
	}
}

// GatewayConfig: defaults are filled in, and what a data plane cannot be
// is refused at apply time with a message that says what to change.
func TestGatewayConfig(t *testing.T) {
	env := shared.Env(t)
	const valid = `
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: tenant, namespace: default}
spec:
  dataPlane: Dedicated
  autoscaling: {minReplicas: 2, maxReplicas: 10}
  proxy:
    image: ghcr.io/tunnelgate/tunnelgate:0.2.0
    resources: {requests: {cpu: 200m, memory: 128Mi}, limits: {memory: 1Gi}}
  cloudflared: {resources: {requests: {cpu: 1}}}
  tunnel: {name: tenant-a, deleteWithGateway: true}
  serveInCluster: true
  proxyArgs: [-log-level=debug, -upstream-max-conns=512]
`
	if err := env.Apply(t.Context(), []byte(valid)); err != nil {
		t.Fatalf("valid GatewayConfig: %v", err)
	}
	got, err := env.Dynamic().Resource(gvrGatewayConfig).Namespace("default").Get(t.Context(), "tenant", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(got.Object, "spec", "autoscaling", "targetCPUUtilizationPercentage"); v != 70 {
		t.Errorf("default targetCPUUtilizationPercentage %d, want 70", v)
	}
	shared := `
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: shared, namespace: default}
spec: {}
`
	if err := env.Apply(t.Context(), []byte(shared)); err != nil {
		t.Fatalf("empty GatewayConfig: %v", err)
	}
	if got, err = env.Dynamic().Resource(gvrGatewayConfig).Namespace("default").Get(t.Context(), "shared", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if m, _, _ := unstructured.NestedString(got.Object, "spec", "dataPlane"); m != "Shared" {
		t.Errorf("default dataPlane %q, want Shared", m)
	}

	for _, tc := range []struct{ name, from, to, want string }{
		{"shared with a tunnel", "dataPlane: Dedicated", "dataPlane: Shared", "set dataPlane to Dedicated"},
		{"replicas and autoscaling", "autoscaling: {minReplicas: 2, maxReplicas: 10}", "autoscaling: {minReplicas: 2, maxReplicas: 10}\n  replicas: 3", "not both"},
		{"more replicas than a tunnel takes", "autoscaling: {minReplicas: 2, maxReplicas: 10}", "replicas: 26", "25"},
		{"min over max", "{minReplicas: 2, maxReplicas: 10}", "{minReplicas: 12, maxReplicas: 10}", "minReplicas must not exceed maxReplicas"},
		{"tunnel name and id", "{name: tenant-a, deleteWithGateway: true}", "{name: tenant-a, id: 6ff42ae2-765d-4adf-8112-31c55c1551ef}", "exactly one of name, id and tokenSecretRef"},
		{"tunnel none", "{name: tenant-a, deleteWithGateway: true}", "{}", "exactly one of name, id and tokenSecretRef"},
		{"delete an adopted tunnel", "{name: tenant-a, deleteWithGateway: true}", "{id: 6ff42ae2-765d-4adf-8112-31c55c1551ef, deleteWithGateway: true}", "deleteWithGateway applies only"},
		{"bad tunnel id", "{name: tenant-a, deleteWithGateway: true}", "{id: not-a-uuid}", "spec.tunnel.id"},
		{"a flag not allowed", "-log-level=debug", "-controller=https://evil.example", "each argument is -name=value"},
		{"a flag without value", "-log-level=debug", "-log-level", "each argument is -name=value"},
		{"bad quantity", "cpu: 200m", "cpu: lots", "spec.proxy.resources.requests.cpu"},
		{"a resource not allowed", "limits: {memory: 1Gi}", "limits: {nvidia.com/gpu: 1}", "only cpu, memory and ephemeral-storage"},
		{"unknown mode", "dataPlane: Dedicated", "dataPlane: PerGateway", "Unsupported value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(strings.Replace(valid, "name: tenant,", "name: bad,", 1), tc.from, tc.to, 1)
			if doc == strings.Replace(valid, "name: tenant,", "name: bad,", 1) {
				t.Fatalf("%q is not in the valid document", tc.from)
			}
			mustReject(t, env, doc, tc.want)
		})
	}
}

func TestExternalBackend(t *testing.T) {
	env := shared.Env(t)
	const valid = `
apiVersion: tunnelgate.dev/v1alpha1
kind: ExternalBackend
metadata: {name: api, namespace: default}
spec:
  host: api.example.com
  port: 443
`
	if err := env.Apply(t.Context(), []byte(valid)); err != nil {
		t.Fatalf("valid ExternalBackend: %v", err)
	}
	got, err := env.Dynamic().Resource(gvrExternalBackend).Namespace("default").Get(t.Context(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Object["spec"].(map[string]any)["protocol"]; p != "http" {
		t.Errorf("default protocol %v, want http", p)
	}
	for _, host := range []string{"10.0.0.1", "2001:db8::1"} {
		if err := env.Apply(t.Context(), []byte(strings.Replace(valid, "api.example.com", host, 1))); err != nil {
			t.Errorf("host %s: %v", host, err)
		}
	}

	// The status subresource exists: a status write through it is kept.
	if got, err = env.Dynamic().Resource(gvrExternalBackend).Namespace("default").Get(t.Context(), "api", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	got.Object["status"] = map[string]any{"conditions": []any{map[string]any{
		"type": "Accepted", "status": "True", "reason": "Valid", "message": "",
		"lastTransitionTime": "2026-01-01T00:00:00Z",
	}}}
	if got, err = env.Dynamic().Resource(gvrExternalBackend).Namespace("default").UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("update status: %v", err)
	} else if conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions"); len(conds) != 1 {
		t.Errorf("status after UpdateStatus: %v", got.Object["status"])
	}

	for _, tc := range []struct{ name, from, to, want string }{
		{"port zero", "port: 443", "port: 0", "spec.port"},
		{"no port", "  port: 443\n", "", "spec.port: Required"},
		{"unknown protocol", "port: 443", "port: 443\n  protocol: grpc", `Unsupported value: "grpc"`},
		{"host is a URL", "api.example.com", "https://api.example.com", "spec.host"},
		{"host with port", "api.example.com", "api.example.com:443", "spec.host"},
		{"host upper case", "api.example.com", "API.example.com", "spec.host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustReject(t, env, strings.Replace(strings.Replace(valid, "name: api,", "name: bad,", 1), tc.from, tc.to, 1), tc.want)
		})
	}
}

func TestApplyMultiDocumentAndList(t *testing.T) {
	env := shared.Env(t)
	docs := `
# a comment-only document is skipped
---
apiVersion: v1
kind: Namespace
metadata: {name: multi}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a, namespace: multi}
  data: {k: v1}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b}
`
	ctx := t.Context()
	for range 2 { // applying twice changes nothing and does not fail
		if err := env.Apply(ctx, []byte(docs)); err != nil {
			t.Fatal(err)
		}
	}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := env.Dynamic().Resource(cm).Namespace("multi").Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := env.Dynamic().Resource(cm).Namespace("default").Get(ctx, "b", metav1.GetOptions{}); err != nil {
		t.Errorf("namespaced object without a namespace should land in default: %v", err)
	}
	if err := env.Apply(ctx, []byte("apiVersion: v1\nkind: NoSuchKind\nmetadata: {name: x}\n")); err == nil {
		t.Error("applied an unknown kind")
	}
}

func TestKubeconfigAndUserConfig(t *testing.T) {
	env := shared.Env(t)
	b, err := os.ReadFile(env.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
			} `json:"cluster"`
		} `json:"clusters"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil || len(kc.Clusters) != 1 || kc.Clusters[0].Cluster.Server != env.Config.Host {
		t.Fatalf("kubeconfig %s: %v %+v", env.Kubeconfig(), err, kc)
	}

	// A user with no RBAC binding is authenticated but may not list.
	cfg, err := env.UserConfig("alice", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dc.Resource(gvrHTTPRoute).Namespace("default").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"alice"`) {
		t.Fatalf("list as alice: %v, want Forbidden naming alice", err)
	}
}

func TestNamespace(t *testing.T) {
	env := shared.Env(t)
	a, b := env.Namespace(t), env.Namespace(t)
	if a == b || !strings.HasPrefix(a, "testnamespace-") {
		t.Errorf("namespaces %q and %q: want distinct, named after the test", a, b)
	}
	long := namespaceName(strings.Repeat("TestX/Sub_Case ", 10))
	if len(long) > 63 || strings.Contains(long, "--") || strings.ContainsAny(long, "_/ ") {
		t.Errorf("namespace name %q is not a DNS label", long)
	}
}

// The API server's certificate names the kubernetes Service, by its names
// and by its ClusterIP (the first address of ServiceCIDR), as on a
// cluster: Pods that test/kubelet runs reach it there.
func TestServingCertificateNamesKubernetesService(t *testing.T) {
	env := shared.Env(t)
	b, err := os.ReadFile(env.pki.path(fileServingCert))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("no PEM block in the serving certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"10.96.0.1", "127.0.0.1", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		if err := cert.VerifyHostname(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
