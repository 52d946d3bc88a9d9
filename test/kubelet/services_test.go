package kubelet_test

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/kubelet"
)

// The kubernetes Service forwards to the API server, whose certificate
// names its ClusterIP; Stop closes the listeners and takes the Service
// CIDR's route away.
func TestKubernetesServiceAndStop(t *testing.T) {
	env := shared.Env(t)
	k, err := kubelet.Start(t.Context(), env.Config, kubelet.Options{Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			k.Stop()
		}
	})
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := kube.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + net.JoinHostPort(svc.Spec.ClusterIP, "443")
	cfg.Timeout = 5 * time.Second
	viaService, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viaService.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the API server at %s: %v", cfg.Host, err)
	}

	k.Stop()
	stopped = true
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(svc.Spec.ClusterIP, "443"), time.Second); err == nil {
		c.Close()
		t.Error("the kubernetes Service still accepts after Stop")
	}
	out, err := exec.Command("ip", "route", "show", "table", "local").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route: %v: %s", err, out)
	}
	if strings.Contains(string(out), kubeenv.ServiceCIDR) {
		t.Errorf("the Service CIDR is still local after Stop:\n%s", out)
	}
}
