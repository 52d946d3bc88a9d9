package kubeenv

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/rest"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// ServiceCIDR is the Services' cluster IP range, given to the API server
// and the controller manager. Nothing routes to it unless a test starts
// test/kubelet, whose Service proxy makes it local to the test's network
// namespace. Its first address is the kubernetes Service's ClusterIP, which
// the API server's serving certificate holds, as on a cluster.
const ServiceCIDR = "10.96.0.0/16"

// startAPIServer runs kube-apiserver on a free loopback port against etcdURL
// and waits for /readyz. It returns the server's URL.
func (e *Env) startAPIServer(ctx context.Context, etcdURL string) (string, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return "", err
	}
	pki := e.pki.path
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(e.Dir, "apiserver"),
		"--tls-cert-file=" + pki(fileServingCert),
		"--tls-private-key-file=" + pki(fileServingKey),
		"--client-ca-file=" + pki(fileCACert),
		"--kubelet-client-certificate=" + pki(fileKubeletCert),
		"--kubelet-client-key=" + pki(fileKubeletKey),
		// A Node's hostname does not resolve here; test/kubelet's does not
		// need to, its InternalIP serves pod logs.
		"--kubelet-preferred-address-types=InternalIP",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki(fileSAPublicKey),
		"--service-account-signing-key-file=" + pki(fileSAPrivateKey),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		// The default reconciler refuses a loopback advertise address and
		// exits; with none, the kubernetes Service simply has no endpoints.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
	}
	if !e.opts.ControllerManager {
		// The ServiceAccount admission plugin rejects pods until the
		// controller manager has created the namespace's default
		// ServiceAccount; without it, pods could never be created.
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	args = append(args, e.opts.APIServerFlags...)
	p, err := e.start(binAPIServer, args)
	if err != nil {
		return "", err
	}
	e.apiserver = p
	host := "https://" + loopback(port)
	hc, err := rest.HTTPClientFor(e.restConfig(host, e.admin))
	if err != nil {
		return "", err
	}
	err = e.waitFor(ctx, p, "kube-apiserver to be ready", func() bool {
		resp, err := hc.Get(host + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return host, err
}
