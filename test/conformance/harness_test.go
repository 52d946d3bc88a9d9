package conformance

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
	"github.com/tunnelgate/tunnelgate/test/netns"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// The cluster the suite runs against, all inside the test's network
// namespace (test/netns): kube-apiserver, etcd and kube-controller-manager
// (test/kubeenv), the kubelet stand-in running the suite's backends as
// processes (test/kubelet, echo-basic built from the suite's module), and
// tunnelgate's controller and proxy as processes of the real binary. Each
// Gateway gets an address of its own from gatewayPool, which the proxy
// serves (-listen-gateways), so the suite reaches every Gateway on its
// listener ports as it would behind a load balancer per Gateway.
const (
	gatewayClass   = "tunnelgate-conformance"
	controllerName = "tunnelgate.dev/conformance"
	// corednsImage is the suite's UDP backend. tunnelgate has no UDPRoute,
	// so no test queries it: it runs as an idle process, so the base
	// namespace's Pods all become Ready.
	corednsImage = "registry.k8s.io/coredns/coredns"
	echoImage    = "registry.k8s.io/gateway-api/echo-basic"
)

// gatewayPool is where each Gateway gets its own address
// (-gateway-address-pool): a part of netns.Range, which is local inside
// the namespace, so the proxy can bind every address of it.
var gatewayPool = netip.PrefixFrom(netns.Addr(200<<8), 24)

// idleMain is the coredns stand-in: it waits to be stopped.
func idleMain([]string) int {
	select {}
}

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
	echo := h.build(t, "echo-basic", ".", "sigs.k8s.io/gateway-api/conformance/echo-basic")

	k, err := kubelet.Start(t.Context(), env.Config, kubelet.Options{
		Images: map[string]string{echoImage: echo},
		Dir:    filepath.Join(h.bins, "kubelet"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)

	token := filepath.Join(h.bins, "config-token")
	if err := os.WriteFile(token, []byte("conformance-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	configAddr := testproc.FreeLoopback(t)
	h.run(t, "controller", tunnelgate, "controller",
		"-kubeconfig="+env.Kubeconfig(), "-controller-name="+controllerName,
		"-config-token-file="+token, "-config-listen="+configAddr, "-config-insecure-plaintext", "-admin="+testproc.FreeLoopback(t),
		"-leader-elect=false", "-no-cloudflare", "-gateway-address-pool="+gatewayPool.String())
	h.run(t, "proxy", tunnelgate, "proxy",
		"-controller=http://"+configAddr, "-token-file="+token,
		"-listen="+testproc.FreeLoopback(t), "-admin="+testproc.FreeLoopback(t), "-listen-gateways")

	if err := env.Apply(t.Context(), fmt.Appendf(nil, `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: %s}
spec: {controllerName: %s}
`, gatewayClass, controllerName)); err != nil {
		t.Fatal(err)
	}
	return h
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
