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
		"--service-cluster-ip-range=" + ServiceCIDR,
	}
	args = append(args, e.opts.ControllerManagerFlags...)
	return e.start(binControllerManager, args)
}

// waitControllerManager waits until the controllers run: the service
// account controller has created default/default, without which no pod can
// be admitted.
func (e *Env) waitControllerManager(ctx context.Context, p *process) error {
	return e.waitFor(ctx, p, "kube-controller-manager to create the default ServiceAccount", func() bool {
		return e.hasDefaultServiceAccount(ctx, "default")
	})
}

// waitServiceAccount waits for the default ServiceAccount of a new
// namespace.
func (e *Env) waitServiceAccount(ctx context.Context, namespace string) error {
	return e.waitFor(ctx, e.controllerManager, "the default ServiceAccount of namespace "+namespace, func() bool {
		return e.hasDefaultServiceAccount(ctx, namespace)
	})
}

func (e *Env) hasDefaultServiceAccount(ctx context.Context, namespace string) bool {
	sa := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	_, err := e.dyn.Resource(sa).Namespace(namespace).Get(ctx, "default", metav1.GetOptions{})
	return err == nil
}
