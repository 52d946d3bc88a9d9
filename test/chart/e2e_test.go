package chart

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/internal/cffake"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/netns"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// The installed chart runs: helm installs a release that manages its tunnel
// by name; two controller replicas and a proxy run from the Deployments
// the API server holds, with the chart's arguments, Secrets and RBAC; and a
// route is served on both origin listeners the way cloudflared reaches
// them. Cloudflare is the stateful fake; cloudflared itself is not run (it
// has no Go module to build it from), but the token file it would read and
// the ingress document it would fetch are checked.
func TestChartRunsEndToEnd(t *testing.T) {
	env := clusterEnv(t)
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	const (
		release, ns, class = "e2e", "e2e-system", "e2e"
		app                = "e2e-app"
		apiToken           = "e2e-api-token"
		account            = "0123456789abcdef0123456789abcdef"
	)
	f := cffake.New(cffake.Options{Token: apiToken})
	t.Cleanup(f.Close)
	f.AddAccount(account, "E2E")
	f.AddZone("zone", "example.com", account)

	if _, err := helm(t, []string{"KUBECONFIG=" + env.Kubeconfig()}, "install", release, chartDir,
		"--namespace", ns, "--create-namespace",
		"--set", "cloudflare.apiToken.value="+apiToken,
		"--set", "cloudflare.accountID="+account,
		"--set", "cloudflare.tunnel.name=e2e-tunnel",
		"--set", "cloudflare.apiURL="+f.URL(),
		"--set", "gatewayClass.name="+class,
		"--set", "gatewayClass.controllerName=tunnelgate.dev/e2e",
		"--set", "proxy.inClusterService.enabled=true",
	); err != nil {
		t.Fatal(err)
	}
	bin := tunnelgateBinary(t)
	root, err := testproc.OwnedTempDir("tunnelgate-chart-pods-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	deployment := func(name string) *appsv1.Deployment {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	// Two controllers, as the chart's ServiceAccount: only its RBAC applies.
	ctl := deployment("e2e-tunnelgate-controller")
	kubeconfig := serviceAccountKubeconfig(t, env, root, ns, ctl.Spec.Template.Spec.ServiceAccountName)
	configAddr := map[string]string{}
	for _, pod := range []string{"e2e-tunnelgate-controller-a", "e2e-tunnelgate-controller-b"} {
		configAddr[pod] = testproc.FreeLoopback(t)
		container{kube: kube, namespace: ns, pod: pod, spec: ctl.Spec.Template.Spec, c: ctl.Spec.Template.Spec.Containers[0],
			listen: map[string]string{"-admin": testproc.FreeLoopback(t), "-config-listen": configAddr[pod]},
			extra:  []string{"-kubeconfig=" + kubeconfig}, root: root,
		}.start(t, bin)
	}

	// The GatewayClass the chart made is accepted: the credentials Secret,
	// the account and the tunnel name work.
	eventually(t, 60*time.Second, "GatewayClass e2e Accepted", func() error {
		gc, err := env.Dynamic().Resource(gvrGatewayClass).Get(ctx, class, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return conditionTrue(gc, "Accepted")
	})
	tunnels := f.Tunnels(account)
	if len(tunnels) != 1 || tunnels[0].Name != "e2e-tunnel" {
		t.Fatalf("Cloudflare has tunnels %+v; want the one named e2e-tunnel the controller created", tunnels)
	}
	tunnelID := tunnels[0].ID
	lease, err := kube.CoordinationV1().Leases(ns).Get(ctx, "e2e-tunnelgate-controller", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || configAddr[*lease.Spec.HolderIdentity] == "" {
		t.Fatalf("leader Lease: %v %+v; want one held by a controller replica", err, lease)
	}

	// A backend, and a Gateway and HTTPRoute of the class.
	backendAddr := netns.Addr(90).String()
	fixture.Backend(t, backendAddr+":8080", "e2e backend")
	if err := env.Apply(ctx, []byte(fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
%[4]s---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: %[1]s}
spec:
  gatewayClassName: %[3]s
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "*.example.com"}]
---
%[5]s`, app, backendAddr, class, fixture.AppBackend(app, backendAddr), webRoute(app, "app.example.com")))); err != nil {
		t.Fatal(err)
	}

	// A proxy, which finds the controller by its Service's DNS name and
	// trusts it by the chart's CA.
	proxy := deployment("e2e-tunnelgate-proxy").Spec.Template.Spec
	origin, originTLS, admin, plain := testproc.FreeLoopback(t), testproc.FreeLoopback(t), testproc.FreeLoopback(t), testproc.FreeLoopback(t)
	_, configPort, _ := net.SplitHostPort(configAddr["e2e-tunnelgate-controller-a"])
	// The origin listener is a unix socket in a volume cloudflared shares
	// (proxy.originTransport unix), used as it is, or a loopback port,
	// moved to a free one.
	listen := map[string]string{"-listen-tls": originTLS, "-admin": admin, "-listen-plain": plain}
	originArg := flags(proxy.InitContainers[0].Args)["-listen"]
	unixOrigin := strings.HasPrefix(originArg, "unix:")
	if !unixOrigin {
		listen["-listen"] = origin
	}
	mounts := container{kube: kube, namespace: ns, pod: "e2e-tunnelgate-proxy-a", spec: proxy, c: proxy.InitContainers[0],
		listen:  listen,
		rewrite: map[string]string{"-controller": "https://e2e-tunnelgate-controller.e2e-system.svc:" + configPort},
		hosts:   "127.0.0.1 e2e-tunnelgate-controller.e2e-system.svc\n", root: root,
	}.start(t, bin)

	// As cloudflared: plain HTTP/1.1 to the origin listener...
	cloudflared, originURL := http.DefaultClient, "http://"+origin+"/hello"
	if unixOrigin {
		sock := strings.TrimPrefix(hostPath(mounts, originArg), "unix:")
		cloudflared = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
		originURL = "http://localhost/hello"
	}
	eventually(t, 30*time.Second, "the route through the origin listener", func() error {
		return expectBackend(cloudflared, originURL)
	})
	// ...and HTTP/2 over TLS to the TLS origin, verified with the CA the
	// chart mounts at caPool, for originServerName.
	internal, err := kube.CoreV1().Secrets(ns).Get(ctx, "e2e-tunnelgate-internal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(internal.Data["ca.crt"])
	h2 := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "origin.tunnelgate.internal", NextProtos: []string{"h2"}}}}
	if err := expectBackend(h2, "https://"+originTLS+"/hello"); err != nil {
		t.Fatalf("TLS origin: %v", err)
	}
	// Every controller replica hands the proxies the session keys of the
	// Secret the chart generated, so all proxies pin clients alike.
	keys, err := kube.CoreV1().Secrets(ns).Get(ctx, "e2e-tunnelgate-session-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for pod, addr := range configAddr {
		cfgClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "e2e-tunnelgate-controller.e2e-system.svc"}}}
		req, _ := http.NewRequest("GET", "https://"+addr+"/v1/config", nil)
		req.Header.Set("Authorization", "Bearer "+string(internal.Data["config-token"]))
		res, err := cfgClient.Do(req)
		if err != nil {
			t.Fatalf("%s config API: %v", pod, err)
		}
		var doc struct {
			Config struct{ SessionKeys [][]byte }
		}
		err = json.NewDecoder(res.Body).Decode(&doc)
		res.Body.Close()
		if err != nil || len(doc.Config.SessionKeys) != 1 || string(doc.Config.SessionKeys[0]) != string(keys.Data["current"]) {
			t.Errorf("%s publishes session keys %d (%v); want the Secret's current key", pod, len(doc.Config.SessionKeys), err)
		}
	}

	// In-cluster clients (proxy.inClusterService): the plain listener the
	// -http Service points at serves the route, and the Gateway lists the
	// Service's name after the tunnel's hostname.
	if err := expectBackend(http.DefaultClient, "http://"+plain+"/hello"); err != nil {
		t.Fatalf("plain listener for in-cluster clients: %v", err)
	}
	eventually(t, 30*time.Second, "the Gateway's addresses", func() error {
		gw, err := env.Dynamic().Resource(gvrGateway).Namespace(app).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		addrs, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
		var got []string
		for _, a := range addrs {
			v, _, _ := unstructured.NestedString(a.(map[string]any), "value")
			got = append(got, v)
		}
		want := []string{tunnelID + translate.TunnelHostnameSuffix, "e2e-tunnelgate-proxy-http.e2e-system.svc.cluster.local"}
		if !slices.Equal(got, want) {
			return fmt.Errorf("status.addresses %v, want %v", got, want)
		}
		return nil
	})
	if res, err := http.Get("http://" + admin + "/readyz"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("proxy /readyz: %v %v", res, err)
	}

	// cloudflared's side: the token file it runs with is the tunnel's, and
	// the ingress document sends the hostname to the proxy's origin
	// listener.
	cfd := proxy.Containers[0]
	cfdMounts := container{kube: kube, namespace: ns, pod: "e2e-tunnelgate-proxy-a", spec: proxy, c: cfd, root: root}.volumes(t)
	tokenFile := hostPath(cfdMounts, flags(cfd.Args)["--token-file"])
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("cloudflared's token file: %v", err)
	}
	var fields struct{ A, T string }
	if b, err := base64.StdEncoding.DecodeString(string(tok)); err != nil || json.Unmarshal(b, &fields) != nil || fields.A != account || fields.T != tunnelID {
		t.Errorf("cloudflared's token %q is not tunnel %s of account %s", tok, tunnelID, account)
	}
	eventually(t, 30*time.Second, "the tunnel's ingress document", func() error {
		doc, _ := f.TunnelConfig(account, tunnelID)
		want := "localhost:8080"
		if unixOrigin {
			want = originArg
		}
		if !strings.Contains(string(doc), `"hostname":"app.example.com"`) || !strings.Contains(string(doc), `"service":"`+want+`"`) && !strings.Contains(string(doc), `"service":"http://`+want+`"`) {
			return fmt.Errorf("ingress document %s", doc)
		}
		return nil
	})
}

// expectBackend GETs url with Host app.example.com, as cloudflared sends it.
func expectBackend(c *http.Client, url string) error {
	req, _ := http.NewRequest("GET", url, nil)
	req.Host = "app.example.com"
	req.Header.Set("X-Forwarded-Proto", "https")
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(b) != "e2e backend /hello" {
		return fmt.Errorf("%s: %d %q", url, res.StatusCode, b)
	}
	if strings.HasPrefix(url, "https:") && res.ProtoMajor != 2 {
		return fmt.Errorf("%s answered over %s, want HTTP/2", url, res.Proto)
	}
	return nil
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount (a client certificate with its user name and groups, which
// RBAC treats as the ServiceAccount).
func serviceAccountKubeconfig(t *testing.T, env *kubeenv.Env, dir, ns, sa string) string {
	t.Helper()
	cfg, err := env.UserConfig("system:serviceaccount:"+ns+":"+sa,
		"system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // for the pod's user
		t.Fatal(err)
	}
	return path
}

// conditionTrue says why the object's condition typ is not True, or nil.
func conditionTrue(u *unstructured.Unstructured, typ string) error {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			if m["status"] == "True" {
				return nil
			}
			return fmt.Errorf("%s is %v: %v: %v", typ, m["status"], m["reason"], m["message"])
		}
	}
	return fmt.Errorf("no %s condition", typ)
}

// eventually retries check until it returns nil or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
