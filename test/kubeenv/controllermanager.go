package kubeenv

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// startControllerManager runs kube-controller-manager with its own identity
// (system:kube-controller-manager, which the default RBAC bootstrap binds)
// and, as on a real cluster, one service account per controller.
func (e *Env) startControllerManager() (*process, error) {
	cert, key, err := e.pki.clientCert("system:kube-controller-manager")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := e.writeKubeconfig("controller-manager.kubeconfig", "system:kube-controller-manager", cert, key)
	if err != nil {
		return nil, err
	}
	pki := e.pki.path
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--secure-port=0", // no metrics or health endpoint, so no port to choose
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki(fileSAPrivateKey),
		"--root-ca-file=" + pki(fileCACert),
		"--cluster-signing-cert-file=" + pki(fileCACert),
		"--cluster-signing-key-file=" + pki(fileCAKey),
		"--service-cluster-ip-range=" + serviceCIDR,
	}
	args = append(args, e.opts.ControllerManagerFlags...)
	return e.start(binControllerManager, args)
}

// waitControllerManager waits until the controllers run: the service
// account controller has created default/default, without which no pod can
// be admitted.
func (e *Env) waitControllerManager(ctx context.Context, p *process) error {
	sa := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	return e.waitFor(ctx, p, "kube-controller-manager to create the default ServiceAccount", func() bool {
		_, err := e.dyn.Resource(sa).Namespace("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
}
