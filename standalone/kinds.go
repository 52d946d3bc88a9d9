// This file lists the kinds Load reads.

package standalone

import (
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// object is what every loadable kind is: it has metadata and a TypeMeta.
type object interface {
	metav1.Object
	runtime.Object
}

// kind describes one loadable kind: where it lives in the API and how to
// decode it, default it and add it to a snapshot.
type kind struct {
	name  string
	group string
	// versions are the served versions we accept. Every one decodes into
	// the same Go type: the older Gateway API versions have the layout of
	// v1 for the fields users write.
	versions []string
	cluster  bool // cluster-scoped: no namespace

	decode   func(data []byte) (object, error)
	defaults func(object)
	add      func(*translate.Snapshot, object)
}

// newKind builds a kind for the Go type T. slice picks T's slice in a
// snapshot; defaults may be nil.
func newKind[T any, P interface {
	*T
	object
}](name, group string, versions []string, cluster bool, slice func(*translate.Snapshot) *[]P, defaults func(P)) *kind {
	return &kind{
		name:     name,
		group:    group,
		versions: versions,
		cluster:  cluster,
		decode: func(data []byte) (object, error) {
			p := P(new(T))
			if err := decodeStrict(data, p); err != nil {
				return nil, err
			}
			return p, nil
		},
		defaults: func(o object) {
			if defaults != nil {
				defaults(o.(P))
			}
		},
		add: func(s *translate.Snapshot, o object) {
			sl := slice(s)
			*sl = append(*sl, o.(P))
		},
	}
}

// apiVersion is the canonical apiVersion of k: its first version.
func (k *kind) apiVersion() string {
	if k.group == "" {
		return k.versions[0]
	}
	return k.group + "/" + k.versions[0]
}

var (
	gw    = gwv1.GroupName
	core  = corev1.GroupName
	disco = discoveryv1.GroupName
	certs = certificatesv1.GroupName
	tg    = v1alpha1.Group
)

// kinds are the loadable kinds, keyed by group and kind ("group/Kind").
var kinds = map[string]*kind{}

func init() {
	for _, k := range []*kind{
		newKind(kindGatewayClass, gw, []string{"v1", "v1beta1"}, true,
			func(s *translate.Snapshot) *[]*gwv1.GatewayClass { return &s.GatewayClasses }, defaultGatewayClass),
		newKind(kindGateway, gw, []string{"v1", "v1beta1"}, false,
			func(s *translate.Snapshot) *[]*gwv1.Gateway { return &s.Gateways }, defaultGateway),
		newKind(kindListenerSet, gw, []string{"v1"}, false,
			func(s *translate.Snapshot) *[]*gwv1.ListenerSet { return &s.ListenerSets }, defaultListenerSet),
		newKind(kindHTTPRoute, gw, []string{"v1", "v1beta1"}, false,
			func(s *translate.Snapshot) *[]*gwv1.HTTPRoute { return &s.HTTPRoutes }, defaultHTTPRoute),
		newKind(kindGRPCRoute, gw, []string{"v1", "v1alpha2"}, false,
			func(s *translate.Snapshot) *[]*gwv1.GRPCRoute { return &s.GRPCRoutes }, defaultGRPCRoute),
		newKind(kindTCPRoute, gw, []string{"v1", "v1alpha2"}, false,
			func(s *translate.Snapshot) *[]*gwv1.TCPRoute { return &s.TCPRoutes }, defaultTCPRoute),
		newKind(kindTLSRoute, gw, []string{"v1", "v1alpha3", "v1alpha2"}, false,
			func(s *translate.Snapshot) *[]*gwv1.TLSRoute { return &s.TLSRoutes }, defaultTLSRoute),
		newKind("ReferenceGrant", gw, []string{"v1", "v1beta1", "v1alpha2"}, false,
			func(s *translate.Snapshot) *[]*gwv1.ReferenceGrant { return &s.ReferenceGrants }, nil),
		newKind(kindBackendTLSPolicy, gw, []string{"v1", "v1alpha3"}, false,
			func(s *translate.Snapshot) *[]*gwv1.BackendTLSPolicy { return &s.BackendTLSPolicies }, defaultBackendTLSPolicy),
		newKind("Service", core, []string{"v1"}, false,
			func(s *translate.Snapshot) *[]*corev1.Service { return &s.Services }, defaultService),
		newKind("Namespace", core, []string{"v1"}, true,
			func(s *translate.Snapshot) *[]*corev1.Namespace { return &s.Namespaces }, defaultNamespace),
		newKind("Secret", core, []string{"v1"}, false,
			func(s *translate.Snapshot) *[]*corev1.Secret { return &s.Secrets }, defaultSecret),
		newKind("ConfigMap", core, []string{"v1"}, false,
			func(s *translate.Snapshot) *[]*corev1.ConfigMap { return &s.ConfigMaps }, nil),
		newKind("ClusterTrustBundle", certs, []string{"v1"}, true,
			func(s *translate.Snapshot) *[]*certificatesv1.ClusterTrustBundle { return &s.ClusterTrustBundles }, nil),
		newKind("EndpointSlice", disco, []string{"v1"}, false,
			func(s *translate.Snapshot) *[]*discoveryv1.EndpointSlice { return &s.EndpointSlices }, defaultEndpointSlice),
		newKind(v1alpha1.KindGatewayClassConfig, tg, []string{v1alpha1.Version}, true,
			func(s *translate.Snapshot) *[]*v1alpha1.GatewayClassConfig { return &s.GatewayClassConfigs }, nil),
		newKind(v1alpha1.KindGatewayConfig, tg, []string{v1alpha1.Version}, false,
			func(s *translate.Snapshot) *[]*v1alpha1.GatewayConfig { return &s.GatewayConfigs }, nil),
		newKind(v1alpha1.KindExternalBackend, tg, []string{v1alpha1.Version}, false,
			func(s *translate.Snapshot) *[]*v1alpha1.ExternalBackend { return &s.ExternalBackends }, defaultExternalBackend),
		newKind(kindAccessPolicy, tg, []string{v1alpha1.Version}, false,
			func(s *translate.Snapshot) *[]*v1alpha1.AccessPolicy { return &s.AccessPolicies }, defaultAccessPolicy),
		newKind(kindLoadBalancingPolicy, tg, []string{v1alpha1.Version}, false,
			func(s *translate.Snapshot) *[]*v1alpha1.LoadBalancingPolicy { return &s.LoadBalancingPolicies }, defaultLoadBalancingPolicy),
		newKind(kindDNSPolicy, tg, []string{v1alpha1.Version}, false,
			func(s *translate.Snapshot) *[]*v1alpha1.DNSPolicy { return &s.DNSPolicies }, defaultDNSPolicy),
	} {
		kinds[k.group+"/"+k.name] = k
	}
}

// Kinds that have a status tunnelgate writes, and so appear in Describe.
const (
	kindGatewayClass        = "GatewayClass"
	kindGateway             = "Gateway"
	kindListenerSet         = "ListenerSet"
	kindHTTPRoute           = "HTTPRoute"
	kindGRPCRoute           = "GRPCRoute"
	kindTCPRoute            = "TCPRoute"
	kindTLSRoute            = "TLSRoute"
	kindBackendTLSPolicy    = "BackendTLSPolicy"
	kindAccessPolicy        = v1alpha1.KindAccessPolicy
	kindLoadBalancingPolicy = v1alpha1.KindLoadBalancingPolicy
	kindDNSPolicy           = v1alpha1.KindDNSPolicy
)

// lookup finds the kind of apiVersion and kindName, or says why there is
// none.
func lookup(apiVersion, kindName string) (*kind, error) {
	if apiVersion == "" {
		return nil, fmt.Errorf("apiVersion is required")
	}
	if kindName == "" {
		return nil, fmt.Errorf("kind is required")
	}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	k := kinds[group+"/"+kindName]
	if k == nil {
		return nil, fmt.Errorf("unknown kind %s in apiVersion %s", kindName, apiVersion)
	}
	if !slices.Contains(k.versions, version) {
		return nil, fmt.Errorf("%s is not served in apiVersion %s (use %s)", kindName, apiVersion, k.apiVersion())
	}
	return k, nil
}

// decodeStrict decodes JSON into v the way the API server does with strict
// field validation: field names match case-sensitively, and unknown or
// duplicate fields are errors, all of them reported at once.
func decodeStrict(data []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s", strings.Join(msgs, ", "))
	}
	return nil
}
