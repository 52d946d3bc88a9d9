// This file renders the ServiceAccount, Service, PodDisruptionBudget,
// NetworkPolicy and autoscaler.

package provision

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// serviceAccount is the Pods' identity, with no API token: the proxies
// never call the Kubernetes API.
func serviceAccount(p Plane) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   meta(p),
		AutomountServiceAccountToken: ptr.To(false),
	}
}

// service exposes the proxies' and cloudflared's metrics, as the chart's
// proxy Service does; relayed to, the relay's port; and, serving in the
// cluster, the listener ports: each to the same port of the Pod, where
// the proxy serves it (-listen-listener-ports).
func service(p Plane) *corev1.Service {
	http, https := "http", "https"
	ports := []corev1.ServicePort{
		{Name: "metrics", Port: proxyMetricsPort, TargetPort: intstr.FromString("metrics"), AppProtocol: &http},
	}
	switch {
	case hasCloudflared(p):
		ports = append(ports, corev1.ServicePort{Name: "cfd-metrics", Port: cloudflaredMetricsPort, TargetPort: intstr.FromString("cfd-metrics"), AppProtocol: &http})
	case p.Params.Relayed():
		ports = append(ports, corev1.ServicePort{Name: "relay", Port: RelayPort, TargetPort: intstr.FromString("relay"), AppProtocol: &https})
	}
	if p.Params.ServesInCluster() {
		for _, l := range p.Ports {
			sp := corev1.ServicePort{Name: fmt.Sprintf("http-%d", l.Port), Port: l.Port, TargetPort: intstr.FromInt32(l.Port), AppProtocol: &http}
			if l.TLS {
				sp.Name, sp.AppProtocol = fmt.Sprintf("https-%d", l.Port), &https
			}
			ports = append(ports, sp)
		}
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(p),
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: p.ClusterIP,
			Selector:  selector(p),
			Ports:     ports,
		},
	}
}

// podDisruptionBudget lets a drain take one proxy Pod at a time.
func podDisruptionBudget(p Plane) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: meta(p),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &one,
			Selector:       &metav1.LabelSelector{MatchLabels: selector(p)},
		},
	}
}

// networkPolicy lets nothing reach the plane's Pods but metrics scrapes
// from the peers Install names, as the chart's NetworkPolicy does for its
// proxies, and, serving in the cluster, any client on the listener ports;
// relayed to, the shared proxies (Install's RelayFrom) on the relay port.
func networkPolicy(p Plane) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	np := &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: meta(p),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selector(p)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{},
		},
	}
	port := func(n int32) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(n)
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &v}
	}
	if from := p.Install.NetworkPolicy.MetricsFrom; len(from) > 0 {
		metrics := []networkingv1.NetworkPolicyPort{port(proxyMetricsPort)}
		if hasCloudflared(p) {
			metrics = append(metrics, port(cloudflaredMetricsPort))
		}
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{Ports: metrics, From: from})
	}
	if p.Params.ServesInCluster() && len(p.Ports) > 0 {
		var listeners []networkingv1.NetworkPolicyPort
		for _, l := range p.Ports {
			listeners = append(listeners, port(l.Port))
		}
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{Ports: listeners})
	}
	if p.Params.Relayed() {
		// The relay's client certificate is the gate; this keeps the
		// rest of the cluster from even knocking.
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{
			Ports: []networkingv1.NetworkPolicyPort{port(RelayPort)}, From: p.Install.NetworkPolicy.RelayFrom})
	}
	return np
}

// horizontalPodAutoscaler scales the Deployment on CPU use.
func horizontalPodAutoscaler(p Plane) *autoscalingv2.HorizontalPodAutoscaler {
	a := p.Params.Autoscaling
	target := a.TargetCPUUtilizationPercentage
	if target == 0 {
		target = v1alpha1.DefaultTargetCPUUtilizationPercentage
	}
	m := meta(p)
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: m,
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: m.Name},
			MinReplicas:    ptr.To(a.MinReplicas),
			MaxReplicas:    a.MaxReplicas,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
				},
			}},
		},
	}
}
