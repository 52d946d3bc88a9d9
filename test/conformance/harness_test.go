package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
	"github.com/tunnelgate/tunnelgate/test/testpki"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// The cluster the suite runs against, all inside the test's network
// namespace (test/netns): kube-apiserver, etcd and kube-controller-manager
// (test/kubeenv), the kubelet stand-in running the suite's backends as
// processes (test/kubelet, echo-basic built from the module the suite
// takes it from, go.mod says which version), and tunnelgate's controller
// as a process of the real binary.
//
// The class gives every Gateway a data plane of its own (its
// GatewayClassConfig's defaultGatewayConfigRef: Dedicated, one replica,
// no tunnel), so each Gateway gets a Deployment, Service and
// ServiceAccount carrying its spec.infrastructure labels and annotations,
// as GatewayInfrastructureMetadata checks. The plane's proxy runs in a Pod
// of the kubelet stand-in (the tunnelgate binary as its image) and serves
// the Gateway's listener ports; its Service takes the Gateway's address
// from gatewayPool as ClusterIP, which the stand-in makes reachable, so
// the suite reaches every Gateway on its listener ports as it would
// behind a Service per Gateway.
const (
	gatewayClass   = "tunnelgate-conformance"
	controllerName = "tunnelgate.dev/conformance"
	// echoImage is the suite's backend (HTTP, gRPC, TCP and UDP echo, by
	// its environment), built from the module the suite takes it from.
	echoImage = "registry.k8s.io/gateway-api/conformance/echo-basic"
	// proxyImage is the planes' proxy image: the tunnelgate binary, with
	// tunnelgate-proxy, which the proxy containers run (their command),
	// beside it as in the release image.
	proxyImage = "tunnelgate.test/tunnelgate"
)

// gatewayPool is where each Gateway gets its own address
// (-gateway-address-pool), which its plane's Service takes as ClusterIP:
// the upper half of the Service CIDR's lower band, which the API server
// keeps for Services that ask for an address (KEP-3070), so no other
// Service holds one.
var gatewayPool = netip.MustParsePrefix("10.96.0.128/25")

type harness struct {
	env  *kubeenv.Env
	bins string
}

// startHarness brings the cluster and tunnelgate up and applies the
// GatewayClass the suite uses.
func startHarness(t *testing.T) *harness {
	t.Helper()
	env := kubeenv.StartT(t, kubeenv.Options{ControllerManager: true})
	h := &harness{env: env, bins: binDir(t)}
	tunnelgate := h.build(t, "tunnelgate", "../..", "./cmd/tunnelgate")
	h.build(t, "tunnelgate-proxy", "../..", "./cmd/tunnelgate-proxy")
	echo := h.build(t, "echo-basic", ".", "sigs.k8s.io/gateway-api-conformance-images/echo-basic")

	k, err := kubelet.Start(t.Context(), env.Config, kubelet.Options{
		Images: map[string]string{echoImage: echo, proxyImage: tunnelgate},
		Dir:    filepath.Join(h.bins, "kubelet"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)

	configAddr, tls := h.configAPI(t, k.HostAddr())
	planes := filepath.Join(h.bins, "planes.json")
	writeJSON(t, planes, provision.Install{
		ProxyImage: proxyImage, CloudflaredImage: "tunnelgate.test/unused",
		ControllerURL:  "https://" + configAddr,
		TunnelProtocol: "http2", GracePeriod: "1s", TerminationGracePeriodSeconds: 5,
	})
	token := filepath.Join(h.bins, "config-token")
	if err := os.WriteFile(token, []byte("conformance-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.run(t, "controller", tunnelgate, "controller",
		"-kubeconfig="+env.Kubeconfig(), "-controller-name="+controllerName,
		"-config-token-file="+token, "-config-listen="+configAddr,
		"-config-tls-cert="+tls.cert, "-config-tls-key="+tls.key,
		"-planes="+planes, "-planes-ca-file="+tls.ca,
		"-admin="+testproc.FreeLoopback(t),
		"-leader-elect=false", "-no-cloudflare", "-gateway-address-pool="+gatewayPool.String())

	if err := env.Apply(t.Context(), fmt.Appendf(nil, `
apiVersion: v1
kind: Namespace
metadata: {name: %[3]s}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: plane-per-gateway, namespace: %[3]s}
spec: {dataPlane: Dedicated, replicas: 1}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayClassConfig
metadata: {name: %[1]s}
spec:
  defaultGatewayConfigRef: {namespace: %[3]s, name: plane-per-gateway}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: %[1]s}
spec:
  controllerName: %[2]s
  parametersRef: {group: tunnelgate.dev, kind: GatewayClassConfig, name: %[1]s}
`, gatewayClass, controllerName, platformNamespace)); err != nil {
		t.Fatal(err)
	}
	return h
}

// platformNamespace holds the class's default GatewayConfig.
const platformNamespace = "tunnelgate-conformance"

// tlsFiles are the config API's certificate, key and CA, as files.
type tlsFiles struct{ cert, key, ca string }

// configAPI picks the config API's address, where the planes' proxies
// reach the controller (the kubelet's host address), and makes its
// certificate.
func (h *harness) configAPI(t *testing.T, host netip.Addr) (string, tlsFiles) {
	ca := testpki.NewCA(t, "conformance config API")
	cert, key := ca.IssueServer(t, host.String())
	files := tlsFiles{cert: filepath.Join(h.bins, "config.crt"), key: filepath.Join(h.bins, "config.key"), ca: filepath.Join(h.bins, "config-ca.crt")}
	for path, b := range map[string][]byte{files.cert: cert, files.key: key, files.ca: ca.PEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(host.String(), strconv.Itoa(port)), files
}

func writeJSON(t *testing.T, path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// binDir is a directory for the binaries and processes' files, kept after
// a failed run (removed at the next run, see testproc.OwnedTempDir).
func binDir(t *testing.T) string {
	dir, err := testproc.OwnedTempDir("tunnelgate-conformance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	return dir
}

// build compiles pkg in the module at dir (tunnelgate in the main module,
// with its own go.mod; echo-basic, a tool of this one) into the bin dir.
func (h *harness) build(t *testing.T, name, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(h.bins, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// run starts a process until the test ends; its output goes to
// <bin dir>/<name>.log, whose end is shown if the test fails.
func (h *harness) run(t *testing.T, name, exe string, args ...string) {
	t.Helper()
	logPath := filepath.Join(h.bins, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = testproc.SysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			log.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logPath)
				if i := len(b) - 4000; i > 0 {
					b = b[i:]
				}
				t.Logf("%s log (end; whole in %s):\n%s", name, logPath, bytes.TrimSpace(b))
			}
		})
	})
}
