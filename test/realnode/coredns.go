package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// coreDNSManifests is the cluster DNS as clusters run it (a Deployment
// behind the kube-dns Service at DNSIP, a ServiceAccount with the
// read-only RBAC of CoreDNS's kubernetes plugin), hardened as the chart's
// own Pods are: user 65532, no capabilities, read-only root, RuntimeDefault
// seccomp. It listens on 1053 (the Service maps 53 to it), so it needs no
// capability to bind. No forward plugin: nothing outside cluster.local is
// answered, and no query leaves the node.
const coreDNSManifests = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:1053 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 5
        }
        cache 5
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata:
      labels: {k8s-app: kube-dns}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: coredns
        image: ` + CoreDNSImage + `
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 1053, protocol: UDP}
        - {name: dns-tcp, containerPort: 1053, protocol: TCP}
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
          periodSeconds: 1
        livenessProbe:
          httpGet: {path: /health, port: 8080}
          periodSeconds: 10
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        volumeMounts:
        - {name: config, mountPath: /etc/coredns, readOnly: true}
      volumes:
      - name: config
        configMap: {name: coredns}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  selector: {k8s-app: kube-dns}
  clusterIP: ` + DNSIP + `
  ports:
  - {name: dns, port: 53, targetPort: 1053, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 1053, protocol: TCP}
`

// startCoreDNS imports the CoreDNS image, applies the manifests and waits
// for its Pod to be Ready.
func (n *Node) startCoreDNS(ctx context.Context) error {
	data, err := os.ReadFile(n.bin.coreDNS())
	if err != nil {
		return err
	}
	dir := filepath.Join(n.Dir, "images", "coredns")
	if err := scratchImage(dir, CoreDNSImage, "65532:65532", []string{"/coredns"}, map[string][]byte{"/coredns": data}); err != nil {
		return fmt.Errorf("realnode: the CoreDNS image: %w", err)
	}
	if err := n.ImportImage(ctx, CoreDNSImage, dir); err != nil {
		return err
	}
	if err := n.env.Apply(ctx, []byte(coreDNSManifests)); err != nil {
		return fmt.Errorf("realnode: applying CoreDNS: %w", err)
	}
	return n.waitFor(ctx, "the CoreDNS Pod to be Ready", func() (bool, error) {
		pods, err := n.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if PodReady(&p) {
				return true, nil
			}
		}
		return false, nil
	}, n.kubelet)
}

// PodReady reports whether p's Ready condition is true.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DescribePods summarises the Pods of a namespace and its events, for
// failure messages.
func (n *Node) DescribePods(ctx context.Context, namespace string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	pods, err := n.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var s string
	for _, p := range pods.Items {
		s += fmt.Sprintf("pod %s/%s phase %s node %q:", p.Namespace, p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			s += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Message)
		}
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			switch {
			case cs.State.Waiting != nil:
				s += fmt.Sprintf(" [%s waiting %s: %s]", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			case cs.State.Terminated != nil:
				s += fmt.Sprintf(" [%s terminated %s %d: %s]", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message)
			case cs.State.Running != nil:
				s += fmt.Sprintf(" [%s running, ready %v]", cs.Name, cs.Ready)
			}
		}
		s += "\n"
	}
	ev, err := n.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range ev.Items {
			s += fmt.Sprintf("event %s %s/%s: %s %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return s
}
