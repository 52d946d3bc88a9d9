package chart

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/config/crd"
	"github.com/tunnelgate/tunnelgate/config/rbac"
	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/ctrl/sessionkeys"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

var update = flag.Bool("update", false, "rewrite the golden renders in testdata/")

func TestLint(t *testing.T) {
	files := valuesFiles(t)
	for _, name := range sortedNames(files) {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, nil, "lint", chartDir, "--strict", "--namespace", releaseNS, "-f", files[name])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

// The renders are reviewed as files: a change to a template shows in the
// diff of testdata/. Generated secrets differ at every render and are
// masked; TestGeneratedSecretsWork checks them.
func TestGoldenRenders(t *testing.T) {
	files := valuesFiles(t)
	for _, name := range sortedNames(files) {
		t.Run(name, func(t *testing.T) {
			got := maskGenerated(t, mustRender(t, files[name]))
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (make chart-check UPDATE=1 writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the render of chart/ci/%s-values.yaml differs from %s; if the change is meant, run `make chart-check UPDATE=1` and review the diff\n%s",
					name, golden, firstDifference(string(want), got))
			}
		})
	}
}

// maskGenerated replaces the data values of Secrets the chart generates
// (annotated tunnelgate.dev/generated) with <generated>.
func maskGenerated(t testing.TB, render string) string {
	t.Helper()
	docs := strings.Split(render, "\n---\n")
	dataLine := regexp.MustCompile(`^(  [-._a-zA-Z0-9]+): \S+$`)
	masked := 0
	for i, doc := range docs {
		if !strings.Contains(doc, `tunnelgate.dev/generated: "true"`) {
			continue
		}
		lines := strings.Split(doc, "\n")
		inData := false
		for j, l := range lines {
			switch {
			case l == "data:":
				inData = true
			case inData && dataLine.MatchString(l):
				lines[j] = dataLine.ReplaceAllString(l, "$1: <generated>")
				masked++
			default:
				inData = inData && strings.HasPrefix(l, "  ")
			}
		}
		docs[i] = strings.Join(lines, "\n")
	}
	if strings.Contains(render, `tunnelgate.dev/generated: "true"`) && masked == 0 {
		t.Fatal("a generated Secret's data was not found to mask")
	}
	return strings.Join(docs, "\n---\n")
}

// firstDifference shows the first line where two texts differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  golden: " + wl + "\n  render: " + gl
		}
	}
	return ""
}

// The internal Secret is what the controller, the proxies and cloudflared
// trust each other with: a fresh CA, certificates for the names they dial,
// and a random token.
func TestGeneratedSecretsWork(t *testing.T) {
	values := valuesFiles(t)["default"]
	objs := decode(t, mustRender(t, values))
	keys := typed[corev1.Secret](t, find(t, objs, "Secret", "-session-keys"))
	if k := keys.Data[sessionkeys.CurrentFile]; len(k) != 32 {
		t.Errorf("the generated session key is %d bytes; want 32 random ones", len(k))
	}
	if _, ok := keys.Data[sessionkeys.PreviousFile]; ok || len(keys.Data) != 1 {
		t.Errorf("the generated session keys Secret holds %d keys; want current only", len(keys.Data))
	}
	secret := typed[corev1.Secret](t, find(t, objs, "Secret", "-internal"))
	data := map[string][]byte{}
	for k, v := range secret.Data {
		data[k] = v
	}

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	for _, c := range []struct{ cert, key, name string }{
		{"controller.crt", "controller.key", "tunnelgate-controller." + releaseNS + ".svc"},
		{"controller.crt", "controller.key", "tunnelgate-controller"},
		{"origin.crt", "origin.key", v1alpha1.DefaultOriginServerName},
	} {
		pair, err := tls.X509KeyPair(data[c.cert], data[c.key])
		if err != nil {
			t.Fatalf("%s and %s: %v", c.cert, c.key, err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: c.name, Roots: roots}); err != nil {
			t.Errorf("%s does not verify for %s against ca.crt: %v", c.cert, c.name, err)
		}
	}
	// The controller certificate is not valid for the origin name, nor the
	// origin one for the controller: a proxy cannot pose as the controller.
	block, _ := pem.Decode(data["origin.crt"])
	origin, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := origin.Verify(x509.VerifyOptions{DNSName: "tunnelgate-controller." + releaseNS + ".svc", Roots: roots}); err == nil {
		t.Error("origin.crt is valid for the controller's name")
	}

	token := string(data["config-token"])
	if len(token) < 32 {
		t.Errorf("config-token is %d characters; want at least 32", len(token))
	}
	again := typed[corev1.Secret](t, find(t, decode(t, mustRender(t, values)), "Secret", "-internal"))
	if string(again.Data["config-token"]) == token || bytes.Equal(again.Data["ca.crt"], data["ca.crt"]) {
		t.Error("two renders made the same token or CA: they are not generated")
	}
}

// The chart wires processes that meet at ports, paths and names; these are
// the meeting points, checked against the code's own constants.
func TestWiring(t *testing.T) {
	for name, values := range valuesFiles(t) {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, mustRender(t, values))
			ctl := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-controller"))
			proxy := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-proxy"))
			svc := typed[corev1.Service](t, find(t, objs, "Service", "-controller"))

			ctlArgs := flags(ctl.Spec.Template.Spec.Containers[0].Args)
			if len(proxy.Spec.Template.Spec.InitContainers) != 1 || len(proxy.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("proxy pod: want the proxy as the one native sidecar and cloudflared as the one container")
			}
			px := proxy.Spec.Template.Spec.InitContainers[0]
			cfd := proxy.Spec.Template.Spec.Containers[0]
			if px.RestartPolicy == nil || *px.RestartPolicy != corev1.ContainerRestartPolicyAlways || px.StartupProbe == nil {
				t.Error("the proxy must be a native sidecar (restartPolicy Always) with a startup probe, so cloudflared starts after it")
			}
			pxArgs := flags(px.Args)

			// The controller runs the image's entrypoint; the proxy the
			// proxy's own binary of the image, as the planes' proxies do
			// (test/chart's image test holds it in the image).
			ctlC := ctl.Spec.Template.Spec.Containers[0]
			if len(ctlC.Command) != 0 || len(ctlC.Args) == 0 || ctlC.Args[0] != "controller" {
				t.Errorf("the controller runs %q %q; want the entrypoint with the controller command", ctlC.Command, ctlC.Args)
			}
			if !slices.Equal(px.Command, []string{provision.ProxyCommand}) || len(px.Args) == 0 || !strings.HasPrefix(px.Args[0], "-") {
				t.Errorf("the proxy runs %q %q; want %s with flags alone", px.Command, px.Args, provision.ProxyCommand)
			}

			// Controller and proxies.
			if got := ctlArgs["-controller-name"]; got != translate.DefaultControllerName {
				t.Errorf("-controller-name = %q, want %q", got, translate.DefaultControllerName)
			}
			port := svc.Spec.Ports[0]
			if port.Name != "config" || ":"+strconv.Itoa(int(port.Port)) != ctlArgs["-config-listen"] {
				t.Errorf("controller Service port %s:%d does not match -config-listen %s", port.Name, port.Port, ctlArgs["-config-listen"])
			}
			wantURL := "https://" + svc.Name + "." + releaseNS + ".svc:" + strconv.Itoa(int(port.Port))
			if pxArgs["-controller"] != wantURL {
				t.Errorf("proxy -controller = %s, want %s", pxArgs["-controller"], wantURL)
			}
			checkMounted(t, ctl.Spec.Template.Spec, ctl.Spec.Template.Spec.Containers[0], ctlArgs["-config-token-file"], "config-token")
			checkMounted(t, proxy.Spec.Template.Spec, px, pxArgs["-token-file"], "config-token")
			checkMounted(t, proxy.Spec.Template.Spec, px, pxArgs["-ca-file"], "ca.crt")
			checkMounted(t, ctl.Spec.Template.Spec, ctl.Spec.Template.Spec.Containers[0], ctlArgs["-config-tls-key"], "controller.key")
			checkMounted(t, proxy.Spec.Template.Spec, px, pxArgs["-tls-key"], "origin.key")
			checkMounted(t, ctl.Spec.Template.Spec, ctl.Spec.Template.Spec.Containers[0], ctlArgs["-session-keys-dir"]+"/"+sessionkeys.CurrentFile, sessionkeys.CurrentFile)

			// Proxy and cloudflared: the origin the controller puts in the
			// tunnel's ingress document (the GatewayClassConfig's origin
			// socket, else the defaults' ports).
			checkOrigin(t, objs, proxy.Spec.Template.Spec, pxArgs)
			checkMounted(t, proxy.Spec.Template.Spec, cfd, v1alpha1.DefaultOriginCAPool, "ca.crt")
			if pxArgs["-tunnel-protocol"] != cfdFlag(cfd.Args, "--protocol") {
				t.Errorf("proxy reports tunnel protocol %q, cloudflared runs %q", pxArgs["-tunnel-protocol"], cfdFlag(cfd.Args, "--protocol"))
			}
			for _, c := range append(proxy.Spec.Template.Spec.Containers, proxy.Spec.Template.Spec.InitContainers...) {
				for _, m := range c.VolumeMounts {
					if m.Name == "internal" && c.Name != "proxy" {
						t.Errorf("container %s mounts the proxy's keys", c.Name)
					}
				}
			}
			if proxy.Spec.Template.Spec.AutomountServiceAccountToken == nil || *proxy.Spec.Template.Spec.AutomountServiceAccountToken {
				t.Error("proxy pods get a Kubernetes API token they never use")
			}
		})
	}
}

// checkOrigin fails unless the proxy listens where the chart's
// GatewayClassConfig sends cloudflared: its origin socket, in a volume
// both containers mount, or else the default ports on loopback.
func checkOrigin(t *testing.T, objs []*unstructured.Unstructured, pod corev1.PodSpec, pxArgs map[string]string) {
	t.Helper()
	socket := ""
	for _, o := range objs {
		if o.GetKind() == "GatewayClassConfig" {
			socket, _, _ = unstructured.NestedString(o.Object, "spec", "origin", "socket")
		}
	}
	if pxArgs["-listen-tls"] != "127.0.0.1:"+strconv.Itoa(v1alpha1.DefaultOriginTLSPort) {
		t.Errorf("proxy -listen-tls=%s; the ingress document points cloudflared at port %d", pxArgs["-listen-tls"], v1alpha1.DefaultOriginTLSPort)
	}
	if socket == "" {
		if pxArgs["-listen"] != "127.0.0.1:"+strconv.Itoa(v1alpha1.DefaultOriginPort) {
			t.Errorf("proxy -listen=%s; the ingress document points cloudflared at port %d", pxArgs["-listen"], v1alpha1.DefaultOriginPort)
		}
		return
	}
	if pxArgs["-listen"] != "unix:"+socket {
		t.Errorf("proxy -listen=%s; the ingress document points cloudflared at unix:%s", pxArgs["-listen"], socket)
	}
	for _, c := range []corev1.Container{pod.InitContainers[0], pod.Containers[0]} {
		shared := false
		for _, m := range c.VolumeMounts {
			if m.MountPath != path.Dir(socket) {
				continue
			}
			for _, v := range pod.Volumes {
				shared = shared || v.Name == m.Name && v.EmptyDir != nil
			}
		}
		if !shared {
			t.Errorf("container %s does not mount the origin socket's directory %s from an emptyDir", c.Name, path.Dir(socket))
		}
	}
}

// flags turns -name=value arguments into a map.
func flags(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			m[k] = v
		}
	}
	return m
}

// cfdFlag is the value of cloudflared's --name=value argument.
func cfdFlag(args []string, name string) string { return flags(args)[name] }

// checkMounted fails unless file is a Secret key of the pod's volumes, as
// mounted in the container: an item, or any key of a Secret mounted whole.
func checkMounted(t *testing.T, pod corev1.PodSpec, c corev1.Container, file, key string) {
	t.Helper()
	if file == "" {
		t.Errorf("container %s: no path given for %s", c.Name, key)
		return
	}
	for _, m := range c.VolumeMounts {
		if path.Dir(file) != m.MountPath {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 && path.Base(file) == key {
				return
			}
			for _, it := range v.Secret.Items {
				if it.Key == key && it.Path == path.Base(file) {
					return
				}
			}
		}
	}
	t.Errorf("container %s: %s is not the Secret key %s", c.Name, file, key)
}

// The GatewayClassConfig says which tunnel and account; cloudflared must
// run that tunnel's token, from the Secret the controller writes when it
// manages the tunnel.
func TestTunnelFromValues(t *testing.T) {
	files := valuesFiles(t)

	objs := decode(t, mustRender(t, files["default"]))
	cfg := typed[v1alpha1.GatewayClassConfig](t, find(t, objs, "GatewayClassConfig", "tunnelgate"))
	if cfg.Spec.AccountID != "0123456789abcdef0123456789abcdef" || cfg.Spec.Tunnel.ID != "6ff42ae2-765d-4adf-8112-31c55c1551ef" {
		t.Errorf("from the tunnel token: account %q, tunnel %q; want those inside the token", cfg.Spec.AccountID, cfg.Spec.Tunnel.ID)
	}
	if cfg.Spec.Tunnel.TokenSecretRef != nil {
		t.Error("with a tunnel token given, the controller must not write the token Secret")
	}
	if got := tokenSecret(t, objs); got != "tunnelgate-tunnel-token" || !has(objs, "Secret", "-tunnel-token") {
		t.Errorf("cloudflared reads Secret %q; want the chart's tunnelgate-tunnel-token", got)
	}
	gc := find(t, objs, "GatewayClass", "tunnelgate")
	if ref, _, _ := unstructured.NestedString(gc.Object, "spec", "parametersRef", "name"); ref != cfg.Name {
		t.Errorf("GatewayClass parametersRef names %q, not the GatewayClassConfig %q", ref, cfg.Name)
	}

	objs = decode(t, mustRender(t, files["ha"]))
	cfg = typed[v1alpha1.GatewayClassConfig](t, find(t, objs, "GatewayClassConfig", "tunnelgate"))
	ref := cfg.Spec.Tunnel.TokenSecretRef
	if cfg.Spec.Tunnel.Name != "prod-cluster" || ref == nil {
		t.Fatalf("tunnel by name: got %+v", cfg.Spec.Tunnel)
	}
	if ref.Namespace != releaseNS || ref.Name != tokenSecret(t, objs) || has(objs, "Secret", "-tunnel-token") {
		t.Errorf("the controller writes %s/%s, cloudflared reads %s, and the chart must not make that Secret itself", ref.Namespace, ref.Name, tokenSecret(t, objs))
	}
	if cfg.Spec.CredentialsRef.Name != "cloudflare-api" || cfg.Spec.CredentialsRef.Key != "api-token" {
		t.Errorf("credentialsRef %+v; want the existing Secret cloudflare-api, key api-token", cfg.Spec.CredentialsRef)
	}
	if cfg.Spec.Tunnel.CredentialRotation != nil {
		t.Errorf("credentialRotation %+v rendered without the value", cfg.Spec.Tunnel.CredentialRotation)
	}
	objs = decode(t, mustRender(t, files["ha"], "--set", "cloudflare.tunnel.credentialRotation.interval=720h"))
	cfg = typed[v1alpha1.GatewayClassConfig](t, find(t, objs, "GatewayClassConfig", "tunnelgate"))
	if r := cfg.Spec.Tunnel.CredentialRotation; r == nil || r.Interval != "720h" {
		t.Errorf("credentialRotation %+v, want interval 720h", r)
	}
}

// tokenSecret is the Secret cloudflared's token volume comes from.
func tokenSecret(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-proxy"))
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "tunnel-token" && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	t.Fatal("the proxy pod has no tunnel-token volume")
	return ""
}

// The chart grants the controller exactly the rules test/integration runs
// it with (TestControllerLeastPrivilege), no more and no fewer.
func TestControllerRBACMatchesConfig(t *testing.T) {
	want := map[string][]rbacv1.PolicyRule{}
	for _, doc := range strings.Split(string(rbac.ControllerYAML), "\n---\n") {
		var r struct {
			Kind     string                `json:"kind"`
			Metadata struct{ Name string } `json:"metadata"`
			Rules    []rbacv1.PolicyRule   `json:"rules"`
		}
		if err := sigsyaml.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatal(err)
		}
		want[r.Kind+"/"+strings.TrimPrefix(r.Metadata.Name, "tunnelgate-controller")] = r.Rules
	}
	if len(want) != 2 {
		t.Fatalf("config/rbac holds %d roles; this test knows 2", len(want))
	}
	objs := decode(t, mustRender(t, valuesFiles(t)["ha"]))
	for key, rules := range want {
		kind, suffix, _ := strings.Cut(key, "/")
		got := find(t, objs, kind, "-controller"+suffix)
		var r struct {
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		b, _ := json.Marshal(got.Object)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(r.Rules, rules) {
			t.Errorf("%s %s: the chart's rules differ from config/rbac/controller.yaml\nchart:  %+v\nconfig: %+v", kind, got.GetName(), r.Rules, rules)
		}
	}
}

// chart/crds holds copies (helm installs CRDs only from inside the chart)
// of ours, from config/crd, where they are generated and tested. The
// Gateway API's are a prerequisite, not bundled (docs/install.md says why).
func TestCRDsMatchConfig(t *testing.T) {
	names, err := fs.Glob(crd.Files(), "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("config/crd holds no CRDs: %v", err)
	}
	for _, name := range names {
		want, err := fs.ReadFile(crd.Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("chart/crds/%s differs from config/crd/%s: cp config/crd/*.yaml chart/crds/", name, name)
		}
	}
	inChart, _ := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if len(inChart) != len(names) {
		t.Errorf("chart/crds has %d files, config/crd %d", len(inChart), len(names))
	}
}

// Every container runs as the images' non-root user, on a read-only root
// filesystem, with no capabilities and the runtime's seccomp profile, and
// asks for resources (but where the values clear them).
func TestContainersAreLockedDown(t *testing.T) {
	for name, values := range valuesFiles(t) {
		t.Run(name, func(t *testing.T) {
			for _, o := range decode(t, mustRender(t, values)) {
				if o.GetKind() != "Deployment" {
					continue
				}
				pod := typed[appsv1.Deployment](t, o).Spec.Template.Spec
				psc := pod.SecurityContext
				if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != imageUID ||
					psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: pod security context %+v; want non-root user %d and seccomp RuntimeDefault", o.GetName(), psc, imageUID)
				}
				for _, c := range append(pod.InitContainers, pod.Containers...) {
					sc := c.SecurityContext
					if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
						sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
						sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 ||
						sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
						t.Errorf("%s/%s: security context %+v", o.GetName(), c.Name, sc)
					}
					if name != "minimal" && (c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero()) {
						t.Errorf("%s/%s: no CPU and memory requests or memory limit", o.GetName(), c.Name)
					}
					if c.LivenessProbe == nil || c.ReadinessProbe == nil {
						t.Errorf("%s/%s: no liveness or readiness probe", o.GetName(), c.Name)
					}
				}
			}
		})
	}
}

// Bad values fail at install with a message naming the value and what is
// wrong, before anything reaches the cluster.
func TestBadValuesAreRefused(t *testing.T) {
	def := valuesFiles(t)["default"]
	token := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		// values.schema.json: each value alone.
		{"replicas not a number", []string{"--set-string", "proxy.replicas=two"}, "at '/proxy/replicas': got string, want integer"},
		{"negative replicas", []string{"--set", "controller.replicas=-1"}, "/controller/replicas"},
		{"misspelt key", []string{"--set", "controler.replicas=1"}, "additional properties 'controler' not allowed"},
		{"misspelt nested key", []string{"--set", "proxy.autoscaling.enable=true"}, "additional properties 'enable' not allowed"},
		{"QUIC misspelt", []string{"--set", "cloudflared.protocol=http3"}, "/cloudflared/protocol"},
		{"digest not sha256", []string{"--set", "image.digest=latest"}, "/image/digest"},
		{"account not hex", []string{"--set", "cloudflare.accountID=my-account"}, "/cloudflare/accountID"},
		{"tunnel ID not a UUID", []string{"--set", "cloudflare.tunnel.token.value=", "--set", "cloudflare.tunnel.id=prod"}, "/cloudflare/tunnel/id"},
		{"class name not DNS", []string{"--set", "gatewayClass.name=Tunnel_Gate"}, "/gatewayClass/name"},
		{"controllerName without domain", []string{"--set", "gatewayClass.controllerName=tunnelgate"}, "/gatewayClass/controllerName"},
		{"CPU target over 100", []string{"--set", "proxy.autoscaling.targetCPUUtilizationPercentage=150"}, "/proxy/autoscaling/targetCPUUtilizationPercentage"},
		{"extra arg without dash", []string{"--set", "controller.extraArgs[0]=v"}, "/controller/extraArgs/0"},
		{"grace period not a duration", []string{"--set", "cloudflared.gracePeriod=30"}, "/cloudflared/gracePeriod"},
		{"origin transport unknown", []string{"--set", "proxy.originTransport=udp"}, "/proxy/originTransport"},
		{"in-cluster port out of range", []string{"--set", "proxy.inClusterService.port=70000"}, "/proxy/inClusterService/port"},
		{"session keys Secret not a name", []string{"--set", "sessionKeys.existingSecret=My_Keys"}, "/sessionKeys/existingSecret"},
		{"memory not a quantity", []string{"--set", "proxy.resources.limits.memory=lots"}, "/proxy/resources/limits/memory"},
		{"5xx ratio over 1", []string{"--set", "metrics.prometheusRule.thresholds.route5xxRatio=5"}, "/metrics/prometheusRule/thresholds/route5xxRatio"},
		{"5xx ratio not a number", []string{"--set", "metrics.prometheusRule.thresholds.route5xxRatio=5%"}, "/metrics/prometheusRule/thresholds/route5xxRatio"},
		{"alert threshold misspelt", []string{"--set", "metrics.prometheusRule.thresholds.syncP99=3"}, "additional properties 'syncP99' not allowed"},
		{"log level misspelt", []string{"--set", "observability.logLevel=verbose"}, "/observability/logLevel"},
		{"access log sample 0", []string{"--set", "observability.accessLog.sample=0"}, "/observability/accessLog/sample"},
		{"unknown sampler", []string{"--set", "observability.tracing.sampler=sometimes"}, "/observability/tracing/sampler"},
		{"tracing without endpoint", []string{"--set", "observability.tracing.enabled=true"}, "observability.tracing: set endpoint"},
		{"dashboard label not a label key", []string{"--set", "metrics.grafanaDashboard.label=grafana dashboard"}, "/metrics/grafanaDashboard/label"},
		{"pprof mode unknown", []string{"--set", "proxy.pprof=everyone"}, "/proxy/pprof"},
		// templates/_validate.tpl: values that do not fit together.
		{"no API token", []string{"--set", "cloudflare.apiToken.value="}, "cloudflare.apiToken: the controller needs a Cloudflare API token"},
		{"API token twice", []string{"--set", "cloudflare.apiToken.existingSecret=cf"}, "give value or existingSecret, not both"},
		{"no tunnel", []string{"--set", "cloudflare.tunnel.token.value="}, "name the tunnel in exactly one way"},
		{"tunnel by id and name", []string{"--set", "cloudflare.tunnel.token.value=", "--set", "cloudflare.tunnel.id=6ff42ae2-765d-4adf-8112-31c55c1551ef", "--set", "cloudflare.tunnel.name=x"}, "name the tunnel in exactly one way"},
		{"tunnel token and name", []string{"--set", "cloudflare.tunnel.name=x"}, "the tunnel token already names the tunnel"},
		{"token secret without id", []string{"--set", "cloudflare.tunnel.token.value=", "--set", "cloudflare.tunnel.token.existingSecret=t"}, "with token.existingSecret, set tunnel.id"},
		{"tunnel token not base64 JSON", []string{"--set", "cloudflare.tunnel.token.value=abc"}, "is not a tunnel token: expected base64 of a JSON object"},
		{"tunnel token without tunnel ID", []string{"--set", "cloudflare.tunnel.token.value=" + token(`{"a":"0123456789abcdef0123456789abcdef","s":"x"}`)}, "it has no account (a) or tunnel ID (t)"},
		{"account differs from the token's", []string{"--set", "cloudflare.accountID=ffffffffffffffffffffffffffffffff"}, "but the tunnel token belongs to account 0123456789abcdef0123456789abcdef"},
		{"autoscaling max below min", []string{"--set", "proxy.autoscaling.enabled=true", "--set", "proxy.autoscaling.minReplicas=5", "--set", "proxy.autoscaling.maxReplicas=2"}, "maxReplicas is below minReplicas"},
		{"rotation interval not a duration", []string{"--set", "cloudflare.tunnel.credentialRotation.interval=monthly"}, "/cloudflare/tunnel/credentialRotation/interval"},
		{"rotation of a given token", []string{"--set", "cloudflare.tunnel.credentialRotation.interval=720h"}, "tunnelgate can rotate only a tunnel token it writes"},
		{"ServiceMonitor the NetworkPolicy blocks", []string{"--set", "metrics.serviceMonitor.enabled=true"}, "metrics.serviceMonitor: the NetworkPolicy lets no pod reach the metrics ports while networkPolicy.metricsFrom is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, def, c.args...)
			if err == nil {
				t.Fatalf("helm template accepted %v", c.args)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the error does not say %q:\n%v", c.want, err)
			}
		})
	}
}

// A value the schema allows must also render; the negative cases above
// would pass vacuously if nothing rendered at all.
func TestGoodValuesRender(t *testing.T) {
	def := valuesFiles(t)["default"]
	for _, args := range [][]string{
		{"--set", "cloudflared.protocol=quic"},
		{"--set", "proxy.replicas=0"},
		{"--set", "image.digest=sha256:" + strings.Repeat("ab", 32)},
		{"--set", "proxy.resources.limits.memory=1.5Gi", "--set", "proxy.resources.requests.cpu=250m"},
		{"--set", "cloudflared.gracePeriod=1m30s"},
		{"--set", "controller.extraArgs[0]=-kube-qps=20"},
		{"--set", "cloudflare.tunnel.token.value=", "--set", "cloudflare.tunnel.name=edge"},
		{"--set", "metrics.grafanaDashboard.enabled=true", "--set", "metrics.grafanaDashboard.label=example.com/dashboard", "--set", "metrics.grafanaDashboard.namespace=monitoring"},
		{"--set", "metrics.prometheusRule.configMap=true", "--set", "metrics.prometheusRule.thresholds.syncP99Seconds=2.5", "--set", "metrics.prometheusRule.thresholds.route5xxRatio=.01"},
		{"--set", "metrics.serviceMonitor.enabled=true", "--set", "networkPolicy.enabled=false"},
		{"--set", "controller.pprof=off", "--set", "proxy.pprof=all"},
	} {
		if _, err := render(t, def, args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// The metrics ports serve Go's profiler too (to loopback peers, by
// default), so the NetworkPolicies open them to networkPolicy.metricsFrom
// only, and to no pod when it is empty: the default install lets pods
// reach nothing but the config API, from the proxies.
func TestMetricsPortsOnlyForMetricsFrom(t *testing.T) {
	files := valuesFiles(t)
	type rule struct {
		Ports []struct{ Port int }
		From  []map[string]any
	}
	ingress := func(objs []*unstructured.Unstructured, suffix string) []rule {
		var np struct {
			Spec struct {
				PolicyTypes []string
				Ingress     []rule
			}
		}
		b, _ := json.Marshal(find(t, objs, "NetworkPolicy", suffix).Object)
		if err := json.Unmarshal(b, &np); err != nil {
			t.Fatal(err)
		}
		if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != "Ingress" {
			t.Errorf("NetworkPolicy %s: policyTypes %v, want [Ingress]", suffix, np.Spec.PolicyTypes)
		}
		return np.Spec.Ingress
	}
	ports := func(rules []rule) (open []int) {
		for _, r := range rules {
			if len(r.From) == 0 {
				t.Errorf("a rule without from lets every peer in: %+v", r)
			}
			for _, p := range r.Ports {
				open = append(open, p.Port)
			}
		}
		return open
	}

	objs := decode(t, mustRender(t, files["default"]))
	if got := ports(ingress(objs, "-controller")); !slices.Equal(got, []int{8081}) {
		t.Errorf("default install: the controller's pods take connections on %v; want the config API (8081) only", got)
	}
	if got := ingress(objs, "-proxy"); len(got) != 0 {
		t.Errorf("default install: the proxy pods take connections: %+v; want none", got)
	}

	objs = decode(t, mustRender(t, files["ha"]))
	ctl, px := ingress(objs, "-controller"), ingress(objs, "-proxy")
	if got := ports(ctl); !slices.Equal(got, []int{8081, 9902}) {
		t.Errorf("ha: the controller's pods take connections on %v; want 8081 and 9902", got)
	}
	if got := ports(px); !slices.Equal(got, []int{9901, 2000, 8082}) {
		t.Errorf("ha: the proxy pods take connections on %v; want 9901 and 2000, and 8082 for proxy.inClusterService", got)
	}
	if got := px[len(px)-1].From; len(got) != 1 || !equality.Semantic.DeepEqual(got[0], map[string]any{"namespaceSelector": map[string]any{}}) {
		t.Errorf("ha: in-cluster clients come from %v; want every pod of the cluster", got)
	}
	var values struct {
		NetworkPolicy struct{ MetricsFrom []map[string]any }
	}
	b, err := os.ReadFile(files["ha"])
	if err == nil {
		err = sigsyaml.Unmarshal(b, &values)
	}
	if err != nil || len(values.NetworkPolicy.MetricsFrom) == 0 {
		t.Fatalf("ha values: %v; want networkPolicy.metricsFrom set", err)
	}
	want := values.NetworkPolicy.MetricsFrom
	for _, r := range []rule{ctl[len(ctl)-1], px[0]} {
		if !equality.Semantic.DeepEqual(r.From, want) {
			t.Errorf("ha: metrics ports open to %v; want networkPolicy.metricsFrom %v", r.From, want)
		}
	}
}

// proxy.pprof and controller.pprof become -pprof; loopback by default.
func TestPprofValues(t *testing.T) {
	def := valuesFiles(t)["default"]
	pprof := func(render string) (controller, proxy string) {
		objs := decode(t, render)
		ctl := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-controller"))
		px := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-proxy"))
		return flags(ctl.Spec.Template.Spec.Containers[0].Args)["-pprof"], flags(px.Spec.Template.Spec.InitContainers[0].Args)["-pprof"]
	}
	if c, p := pprof(mustRender(t, def)); c != "loopback" || p != "loopback" {
		t.Errorf("default: controller -pprof=%q, proxy -pprof=%q; want loopback for both", c, p)
	}
	if c, p := pprof(mustRender(t, def, "--set", "controller.pprof=off", "--set", "proxy.pprof=all")); c != "off" || p != "all" {
		t.Errorf("controller.pprof=off, proxy.pprof=all: got -pprof=%q and -pprof=%q", c, p)
	}
}

// proxy.originTransport: tcp, the default whatever gatewayClass.create
// says (and what empty means), keeps the origin listener on loopback port
// 8080 and names no socket in the GatewayClassConfig; unix, an opt-in
// (cloudflared answers WebSockets over a socket 502, issue 40), puts it on
// a socket both containers share and names it there.
func TestOriginTransport(t *testing.T) {
	def := valuesFiles(t)["default"]
	for _, c := range []struct {
		name string
		set  []string
		unix bool
	}{
		{"default", nil, false},
		{"default without the GatewayClassConfig", []string{"--set", "gatewayClass.create=false"}, false},
		{"empty", []string{"--set", "proxy.originTransport="}, false},
		{"tcp", []string{"--set", "proxy.originTransport=tcp"}, false},
		{"unix", []string{"--set", "proxy.originTransport=unix"}, true},
	} {
		objs := decode(t, mustRender(t, def, c.set...))
		proxy := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-proxy"))
		pxArgs := flags(proxy.Spec.Template.Spec.InitContainers[0].Args)
		checkOrigin(t, objs, proxy.Spec.Template.Spec, pxArgs)
		if got := strings.HasPrefix(pxArgs["-listen"], "unix:"); got != c.unix {
			t.Errorf("%s: -listen=%s", c.name, pxArgs["-listen"])
		}
		for _, v := range proxy.Spec.Template.Spec.Volumes {
			if v.Name == "origin-socket" && !c.unix {
				t.Errorf("%s: the proxy Pods have an origin-socket volume", c.name)
			}
		}
	}
}

// proxy.inClusterService: a Service in front of the proxies' plain
// listener, its DNS name on Gateways' status after controller.gatewayAddress.
func TestInClusterService(t *testing.T) {
	objs := decode(t, mustRender(t, valuesFiles(t)["ha"]))
	proxy := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-proxy"))
	ctl := typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-controller"))
	svc := typed[corev1.Service](t, find(t, objs, "Service", "-proxy-http"))

	px := proxy.Spec.Template.Spec.InitContainers[0]
	var port int32
	for _, p := range px.Ports {
		if p.Name == "http" {
			port = p.ContainerPort
		}
	}
	if got := flags(px.Args)["-listen-plain"]; port == 0 || got != ":"+strconv.Itoa(int(port)) {
		t.Errorf("proxy -listen-plain=%q, container port http %d: want them to agree", got, port)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.StrVal != "http" || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("Service %s: %+v; want ClusterIP port 80 to the proxies' http port", svc.Name, svc.Spec)
	}
	if !equality.Semantic.DeepEqual(svc.Spec.Selector, proxy.Spec.Selector.MatchLabels) {
		t.Errorf("Service selects %v; the proxies are %v", svc.Spec.Selector, proxy.Spec.Selector.MatchLabels)
	}
	// The Service's name is reachable only in the cluster: its
	// routability (GEP-5093) is Cluster.
	want := "prod.example.com," + svc.Name + "." + releaseNS + ".svc.cluster.local=Cluster"
	if got := flags(ctl.Spec.Template.Spec.Containers[0].Args)["-gateway-address"]; got != want {
		t.Errorf("controller -gateway-address=%q; want %q", got, want)
	}

	objs = decode(t, mustRender(t, valuesFiles(t)["default"]))
	for _, o := range objs {
		if o.GetKind() == "Service" && strings.HasSuffix(o.GetName(), "-proxy-http") {
			t.Errorf("default install has Service %s; in-cluster clients are off by default", o.GetName())
		}
	}
	if _, ok := flags(typed[appsv1.Deployment](t, find(t, objs, "Deployment", "-proxy")).Spec.Template.Spec.InitContainers[0].Args)["-listen-plain"]; ok {
		t.Error("default install: the proxy opens its plain listener")
	}
}
