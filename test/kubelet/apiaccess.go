package kubelet

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// API access from Pods. As a kubelet does, the Kubelet gives every
// container KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the
// kubernetes Service's ClusterIP and port (10.96.0.1:443 with kubeenv),
// which the Service proxy forwards to the API server (services.go).
//
// In-cluster clients read their token and CA at the fixed path
// serviceAccountDir, which a process sharing the machine's filesystem
// cannot be given. In its place, a container that mounts a volume there
// holding token and ca.crt (the kube-api-access projected volume the
// ServiceAccount admission plugin injects, which kubeenv enables with the
// controller manager) gets KUBECONFIG, naming a kubeconfig the Kubelet
// writes for it (<pod dir>/<container>.kubeconfig):
//
//	server:                https://<ClusterIP>:<port>
//	certificate-authority: <the volume's ca.crt on the host>
//	tokenFile:             <the volume's token on the host>
//	namespace:             <the Pod's>
//
// So client-go's default loading (clientcmd with $KUBECONFIG, as
// controller-runtime's config.GetConfig and BuildConfigFromFlags("",
// os.Getenv("KUBECONFIG")) do) finds the API server as the Pod's
// ServiceAccount, and RBAC applies as on a cluster. client-go re-reads
// tokenFile, so a token written again works. rest.InClusterConfig alone
// does not work: it reads the fixed path. A KUBECONFIG the container sets
// itself wins.

// serviceAccountDir is where in-cluster clients look for their token and
// CA.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// apiEnv is the environment that gives container c the API server.
func (p *pod) apiEnv(c corev1.Container) ([]string, error) {
	svc, ok := p.k.proxy.kubernetesService()
	if !ok {
		p.k.opts.Log.Warn("the kubernetes Service is unknown: the container gets no KUBERNETES_SERVICE_HOST", "pod", p.String(), "container", c.Name)
		return nil, nil
	}
	env := []string{
		"KUBERNETES_SERVICE_HOST=" + svc.Addr().String(),
		"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(int(svc.Port())),
	}
	token, ca := p.hostPath(c, serviceAccountDir+"/token"), p.hostPath(c, serviceAccountDir+"/ca.crt")
	if token == serviceAccountDir+"/token" || !isFile(token) || !isFile(ca) {
		return env, nil // no ServiceAccount volume mounted there
	}
	path, err := p.writeKubeconfig(c.Name, svc, ca, token)
	if err != nil {
		return nil, err
	}
	return append(env, "KUBECONFIG="+path), nil
}

// writeKubeconfig writes a kubeconfig for a container to reach the API
// server at the kubernetes Service with its ServiceAccount's token.
func (p *pod) writeKubeconfig(container string, svc netip.AddrPort, ca, token string) (string, error) {
	const name = "in-cluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:               "https://" + net.JoinHostPort(svc.Addr().String(), strconv.Itoa(int(svc.Port()))),
		CertificateAuthority: ca,
	}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: p.namespace}
	cfg.CurrentContext = name
	path := filepath.Join(p.dir, container+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
