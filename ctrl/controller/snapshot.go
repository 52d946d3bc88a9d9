// This file copies the informer caches into a translate.Snapshot.

package controller

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// snapshot copies the informer caches into a translate.Snapshot. The
// objects are the caches' own, shared and read-only: translate never
// changes its input. translate's Cache tells what changed by UID and
// resourceVersion, which every object of an informer has.
func (w *watched) snapshot() translate.Snapshot {
	return translate.Snapshot{
		GatewayClasses:        list[gwv1.GatewayClass](w.classes),
		Gateways:              list[gwv1.Gateway](w.gateways),
		ListenerSets:          list[gwv1.ListenerSet](w.listenerSets),
		HTTPRoutes:            list[gwv1.HTTPRoute](w.httpRoutes),
		GRPCRoutes:            list[gwv1.GRPCRoute](w.grpcRoutes),
		TCPRoutes:             list[gwv1.TCPRoute](w.tcpRoutes),
		TLSRoutes:             list[gwv1.TLSRoute](w.tlsRoutes),
		ReferenceGrants:       list[gwv1.ReferenceGrant](w.grants),
		BackendTLSPolicies:    list[gwv1.BackendTLSPolicy](w.policies),
		Services:              list[corev1.Service](w.services),
		EndpointSlices:        list[discoveryv1.EndpointSlice](w.slices),
		Namespaces:            list[corev1.Namespace](w.namespaces),
		Secrets:               list[corev1.Secret](w.secrets),
		ConfigMaps:            list[corev1.ConfigMap](w.configMaps),
		ClusterTrustBundles:   list[certificatesv1.ClusterTrustBundle](w.trustBundles),
		GatewayClassConfigs:   list[v1alpha1.GatewayClassConfig](w.classConfigs),
		GatewayConfigs:        list[v1alpha1.GatewayConfig](w.gatewayConfigs),
		ExternalBackends:      list[v1alpha1.ExternalBackend](w.externals),
		AccessPolicies:        list[v1alpha1.AccessPolicy](w.accessPolicies),
		LoadBalancingPolicies: list[v1alpha1.LoadBalancingPolicy](w.lbPolicies),
		DNSPolicies:           list[v1alpha1.DNSPolicy](w.dnsPolicies),
	}
}

// list returns an informer's objects of type T; nil for a kind that is not
// watched.
func list[T any](inf cache.SharedIndexInformer) []*T {
	if inf == nil {
		return nil
	}
	objs := inf.GetStore().List()
	out := make([]*T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(*T); ok {
			out = append(out, t)
		}
	}
	return out
}

// bundleVersion is the Gateway API bundle version installed, from the
// GatewayClass CRD's annotation; "unknown" when it cannot be read, which
// translate reports as an unsupported version, as the spec asks.
func (w *watched) bundleVersion() string {
	for _, o := range w.crds.GetStore().List() {
		if a := accessor(o); a != nil && a.GetName() == bundleCRD {
			if v := a.GetAnnotations()[bundleVersionAnnotate]; v != "" {
				return v
			}
		}
	}
	return "unknown"
}

// lookup finds a watched object by kind, for event references.
func (w *watched) lookup(kind, namespace, name string) any {
	var inf cache.SharedIndexInformer
	switch kind {
	case "GatewayClass":
		inf = w.classes
	case "Gateway":
		inf = w.gateways
	case "ListenerSet":
		inf = w.listenerSets
	case "HTTPRoute":
		inf = w.httpRoutes
	case "GRPCRoute":
		inf = w.grpcRoutes
	case "TCPRoute":
		inf = w.tcpRoutes
	case "TLSRoute":
		inf = w.tlsRoutes
	case "BackendTLSPolicy":
		inf = w.policies
	case v1alpha1.KindAccessPolicy:
		inf = w.accessPolicies
	case v1alpha1.KindLoadBalancingPolicy:
		inf = w.lbPolicies
	case v1alpha1.KindDNSPolicy:
		inf = w.dnsPolicies
	}
	if inf == nil {
		return nil
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	o, ok, _ := inf.GetStore().GetByKey(key)
	if !ok {
		return nil
	}
	return o
}
