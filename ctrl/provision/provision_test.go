package provision

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// install is what the tests' controller was installed with.
var install = Install{
	ProxyImage:                    "ghcr.io/tunnelgate/tunnelgate:0.1.0",
	CloudflaredImage:              "cloudflare/cloudflared:2026.8.2",
	ControllerURL:                 "https://tunnelgate-controller.tunnelgate-system.svc:8081",
	TunnelProtocol:                "http2",
	GracePeriod:                   "30s",
	TerminationGracePeriodSeconds: 60,
	ProxyResources: v1alpha1.ContainerResources{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	},
	CloudflaredResources: v1alpha1.ContainerResources{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	},
	NetworkPolicy: &NetworkPolicy{
		MetricsFrom: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}},
		RelayFrom: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "tunnelgate-system"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/component": "proxy"}},
		}},
	},
}

// TestGolden renders testdata/<case>.yaml (a Gateway, then its
// GatewayConfig) and compares with <case>.out.yaml. go test
// ./ctrl/provision -args -update rewrites them.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range cases {
		if strings.HasSuffix(in, ".out.yaml") {
			continue
		}
		n++
		t.Run(strings.TrimSuffix(filepath.Base(in), ".yaml"), func(t *testing.T) {
			p := readPlane(t, in)
			objs, err := Objects(p)
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, objs)
			out := strings.TrimSuffix(in, ".yaml") + ".out.yaml"
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the rendering (-args -update rewrites it):\n%s", out, got)
			}
		})
	}
	if n < 4 {
		t.Fatalf("%d golden cases; want at least 4", n)
	}
}

func readPlane(t *testing.T, path string) Plane {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%s: want a Gateway and a GatewayConfig, got %d documents", path, len(docs))
	}
	var gw gwv1.Gateway
	var cfg v1alpha1.GatewayConfig
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &gw); err != nil {
		t.Fatalf("%s: Gateway: %v", path, err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &cfg); err != nil {
		t.Fatalf("%s: GatewayConfig: %v", path, err)
	}
	p := Plane{Gateway: &gw, Params: cfg.Spec, Install: install, Secrets: SecretsOf(&gw, &cfg.Spec)}
	// What translate would hand: the listener ports, and a static address
	// as the pool's.
	for _, l := range gw.Spec.Listeners {
		if !slices.ContainsFunc(p.Ports, func(x Port) bool { return x.Port == l.Port }) {
			p.Ports = append(p.Ports, Port{Port: l.Port, TLS: l.Protocol == gwv1.HTTPSProtocolType})
		}
	}
	if len(gw.Spec.Addresses) > 0 {
		p.ClusterIP = gw.Spec.Addresses[0].Value
	}
	if p.Params.Relayed() {
		p.Relay = &RelayCredentials{CA: []byte("relay CA"), Cert: []byte("cert"), Key: []byte("key")}
	}
	return p
}

// render writes the objects as the controller would apply them: no status,
// no creation timestamp.
func render(t *testing.T, objs []runtime.Object) []byte {
	t.Helper()
	var out bytes.Buffer
	for i, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		delete(u, "status")
		if m, ok := u["metadata"].(map[string]any); ok {
			delete(m, "creationTimestamp")
		}
		if tmpl, ok := nested(u, "spec", "template", "metadata"); ok {
			delete(tmpl, "creationTimestamp")
		}
		b, err := yaml.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return out.Bytes()
}

func nested(m map[string]any, path ...string) (map[string]any, bool) {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// What the CRD refuses is refused here too, naming the Gateway.
func TestObjectsRefuse(t *testing.T) {
	base := readPlane(t, "testdata/minimal.yaml")
	three, zero, many := int32(3), int32(0), int32(26)
	for name, mutate := range map[string]func(*v1alpha1.GatewayConfigSpec){
		"shared":             func(s *v1alpha1.GatewayConfigSpec) { s.DataPlane = v1alpha1.DataPlaneShared },
		"zero replicas":      func(s *v1alpha1.GatewayConfigSpec) { s.Replicas = &zero },
		"more than a tunnel": func(s *v1alpha1.GatewayConfigSpec) { s.Replicas = &many },
		"replicas and autoscale": func(s *v1alpha1.GatewayConfigSpec) {
			s.Replicas = &three
			s.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 2}
		},
		"min over max": func(s *v1alpha1.GatewayConfigSpec) {
			s.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 3, MaxReplicas: 2}
		},
		"flag not allowed":   func(s *v1alpha1.GatewayConfigSpec) { s.ProxyArgs = []string{"-controller=https://evil.example"} },
		"flag without value": func(s *v1alpha1.GatewayConfigSpec) { s.ProxyArgs = []string{"-log-level"} },
		"not a flag":         func(s *v1alpha1.GatewayConfigSpec) { s.ProxyArgs = []string{"log-level=debug"} },
	} {
		p := base
		p.Params = (&v1alpha1.GatewayConfig{Spec: base.Params}).DeepCopy().Spec
		mutate(&p.Params)
		if _, err := Objects(p); err == nil || !strings.Contains(err.Error(), "gateway tenants/minimal") {
			t.Errorf("%s: %v; want an error naming the Gateway", name, err)
		}
	}
}

// Name stays within 63 characters, and apart for different Gateways.
func TestName(t *testing.T) {
	if got := Name("web", "tunnelgate"); got != "web-tunnelgate" {
		t.Errorf("Name = %q", got)
	}
	long := strings.Repeat("a", 60)
	a, b := Name(long+"x", "tunnelgate"), Name(long+"y", "tunnelgate")
	if len(a) > 63 || len(b) > 63 || a == b {
		t.Errorf("long names %q and %q: want at most 63 characters and different", a, b)
	}
}

// A plane's Secrets: its credentials Secret, owned by the Gateway, and its
// tunnel token where the GatewayConfig says, else where the controller
// writes it.
func TestSecrets(t *testing.T) {
	p := readPlane(t, "testdata/minimal.yaml")
	if want := (Secrets{Credentials: "minimal-tunnelgate-credentials", TunnelToken: "minimal-tunnelgate-tunnel", TunnelTokenKey: "token"}); p.Secrets != want {
		t.Errorf("SecretsOf = %+v, want %+v", p.Secrets, want)
	}
	own := v1alpha1.GatewayConfigSpec{Tunnel: &v1alpha1.GatewayTunnel{TokenSecretRef: &v1alpha1.LocalSecretKeyRef{Name: "mine", Key: "tok"}}}
	if got := SecretsOf(p.Gateway, &own); got.TunnelToken != "mine" || got.TunnelTokenKey != "tok" || got.Credentials != p.Secrets.Credentials {
		t.Errorf("with a tokenSecretRef: %+v", got)
	}
	s := CredentialsSecret(p, "t0k3n", []byte("CA"))
	if s.Name != p.Secrets.Credentials || s.Namespace != p.Gateway.Namespace ||
		string(s.Data[KeyConfigToken]) != "t0k3n" || string(s.Data[KeyCA]) != "CA" {
		t.Errorf("credentials Secret %s/%s %v", s.Namespace, s.Name, s.Data)
	}
	if o := s.OwnerReferences; len(o) != 1 || o[0].Kind != "Gateway" || o[0].Name != p.Gateway.Name || !*o[0].Controller {
		t.Errorf("credentials Secret owners %+v: want the Gateway", o)
	}
}

// The install settings the chart writes are read back as they were, and
// what would make a broken plane is refused.
func TestParseInstall(t *testing.T) {
	b, err := json.Marshal(install)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseInstall(b)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, install) {
		t.Errorf("round trip: got %+v, want %+v", got, install)
	}
	for name, doc := range map[string]string{
		"unknown field":  `{"proxyImage":"a","prxyImage":"b"}`,
		"plain http":     strings.Replace(string(b), "https://", "http://", 1),
		"no image":       strings.Replace(string(b), `"proxyImage":"ghcr.io/tunnelgate/tunnelgate:0.1.0"`, `"proxyImage":""`, 1),
		"short grace":    strings.Replace(string(b), `"terminationGracePeriodSeconds":60`, `"terminationGracePeriodSeconds":30`, 1),
		"bad protocol":   strings.Replace(string(b), `"http2"`, `"h3"`, 1),
		"two objects":    string(b) + string(b),
		"not json":       "proxyImage: a",
		"negative grace": strings.Replace(string(b), `"30s"`, `"-1s"`, 1),
	} {
		if _, err := ParseInstall([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParseInstall(f *testing.F) {
	b, _ := json.Marshal(install)
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"gracePeriod":"9223372036854775807s"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseInstall(data)
		if err != nil {
			return
		}
		if err := in.check(); err != nil {
			t.Fatalf("accepted settings fail their own check: %v", err)
		}
	})
}
