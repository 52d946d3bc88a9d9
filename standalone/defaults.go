// This file fills in what the API server would default.

package standalone

import (
	"crypto/sha1"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// Objects read from files have not been through an API server, so Load
// sets what one would have set on create, and translate may rely on.
//
// Metadata, every kind:
//   - namespace "default" when unset on a namespaced kind (in load.go)
//   - generation 1 when 0
//   - creationTimestamp, when unset, baseTime plus one second per object
//     in load order, so "oldest wins" rules follow file order
//   - uid, when empty, derived from kind, namespace and name
//   - apiVersion and kind set to the served version decoded into
//   - status dropped on kinds with a status subresource, as create does
//
// Core: Service type ClusterIP, port protocol TCP, targetPort = port;
// EndpointSlice port protocol TCP and name ""; Secret type Opaque and
// stringData merged into data; Namespace label kubernetes.io/metadata.name.
//
// Gateway API, the +kubebuilder:default markers of apis/v1 (v1.7.0) that
// bear on translation:
//   - ParentReference group gateway.networking.k8s.io, kind Gateway
//     (shared_types.go), likewise ListenerSet's ParentGatewayReference
//   - BackendObjectReference group "", kind Service; BackendRef weight 1
//     (object_reference_types.go, shared_types.go)
//   - SecretObjectReference group "", kind Secret (certificateRefs,
//     clientCertificateRef)
//   - HTTPRoute rules [{matches: [{path: {PathPrefix, "/"}}]}], rule
//     matches [{path: {PathPrefix, "/"}}], match path {PathPrefix, "/"},
//     path type PathPrefix and value "/", header and query param match
//     type Exact (httproute_types.go)
//   - HTTPRoute filters: requestRedirect statusCode 302, requestMirror
//     fraction denominator 100, cors maxAge 5
//   - GRPCRoute method and header match type Exact (grpcroute_types.go)
//   - TCPRoute and TLSRoute: none of their own; their parentRefs and
//     backendRefs take the ParentReference and BackendRef defaults above
//   - sessionPersistence type Cookie, cookie path "/" and lifetimeType
//     Session (a route written for v1.6, with sessionName and
//     cookieConfig, is read in v1.7's shape first: gwcompat)
//   - HTTPRoute retry attempts 1
//   - Listener allowedRoutes {namespaces: {from: Same}}, namespaces
//     {from: Same}, from Same, kinds group gateway.networking.k8s.io; tls
//     mode Terminate (gateway_types.go, listenerset_types.go)
//   - Gateway addresses type IPAddress; allowedListeners namespaces
//     {from: None}; frontend TLS validation mode AllowValidOnly
//
// Not applied: the status defaults (Pending conditions), which translate
// replaces anyway.

// baseTime is the creationTimestamp of the first object loaded.
var baseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// defaultMeta sets the metadata of the i-th object loaded.
func defaultMeta(k *kind, o object, i int) {
	gv := schema.GroupVersion{Group: k.group, Version: k.versions[0]}
	o.GetObjectKind().SetGroupVersionKind(gv.WithKind(k.name))
	if o.GetGeneration() == 0 {
		o.SetGeneration(1)
	}
	if ts := o.GetCreationTimestamp(); ts.IsZero() {
		o.SetCreationTimestamp(metav1.NewTime(createdAt(i)))
	}
	if o.GetUID() == "" {
		o.SetUID(uid(k.name, o.GetNamespace(), o.GetName()))
	}
}

// uid is a name-based (version 5 style) UUID of an object's identity, so
// the same files give the same uids.
func uid(kind, namespace, name string) types.UID {
	h := sha1.Sum([]byte(kind + "/" + namespace + "/" + name))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]))
}

func newNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: contentVersion([]byte("Namespace " + name))}}
}

func defaultNamespace(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

func defaultService(s *corev1.Service) {
	if s.Spec.Type == "" {
		s.Spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal == 0 ||
			p.TargetPort.Type == intstr.String && p.TargetPort.StrVal == "" {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	s.Status = corev1.ServiceStatus{}
}

func defaultEndpointSlice(es *discoveryv1.EndpointSlice) {
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Protocol == nil {
			p.Protocol = ptr(corev1.ProtocolTCP)
		}
		if p.Name == nil {
			p.Name = ptr("")
		}
	}
}

func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	// The API server merges stringData into data on write, stringData
	// winning, and never returns stringData.
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func defaultExternalBackend(b *v1alpha1.ExternalBackend) {
	b.Status = v1alpha1.ExternalBackendStatus{}
}

func defaultGatewayClass(c *gwv1.GatewayClass) {
	c.Status = gwv1.GatewayClassStatus{}
}

func defaultGateway(g *gwv1.Gateway) {
	for i := range g.Spec.Listeners {
		l := &g.Spec.Listeners[i]
		defaultListener(&l.AllowedRoutes, l.TLS)
	}
	for i := range g.Spec.Addresses {
		setDefault(&g.Spec.Addresses[i].Type, gwv1.IPAddressType)
	}
	if al := g.Spec.AllowedListeners; al != nil {
		setDefault(&al.Namespaces, gwv1.ListenerNamespaces{})
		setDefault(&al.Namespaces.From, gwv1.NamespacesFromNone)
	}
	if tls := g.Spec.TLS; tls != nil {
		if tls.Backend != nil && tls.Backend.ClientCertificateRef != nil {
			defaultSecretRef(tls.Backend.ClientCertificateRef)
		}
		if f := tls.Frontend; f != nil {
			defaultFrontendValidation(f.Default.Validation)
			for i := range f.PerPort {
				defaultFrontendValidation(f.PerPort[i].TLS.Validation)
			}
		}
	}
	g.Status = gwv1.GatewayStatus{}
}

func defaultFrontendValidation(v *gwv1.FrontendTLSValidation) {
	if v != nil && v.Mode == "" {
		v.Mode = gwv1.AllowValidOnly
	}
}

func defaultListenerSet(ls *gwv1.ListenerSet) {
	setDefault(&ls.Spec.ParentRef.Group, gwv1.GroupName)
	setDefault(&ls.Spec.ParentRef.Kind, "Gateway")
	for i := range ls.Spec.Listeners {
		l := &ls.Spec.Listeners[i]
		defaultListener(&l.AllowedRoutes, l.TLS)
	}
	ls.Status = gwv1.ListenerSetStatus{}
}

// defaultListener defaults the fields a Gateway's Listener and a
// ListenerSet's ListenerEntry share.
func defaultListener(ar **gwv1.AllowedRoutes, tls *gwv1.ListenerTLSConfig) {
	setDefault(ar, gwv1.AllowedRoutes{})
	setDefault(&(*ar).Namespaces, gwv1.RouteNamespaces{})
	setDefault(&(*ar).Namespaces.From, gwv1.NamespacesFromSame)
	for i := range (*ar).Kinds {
		setDefault(&(*ar).Kinds[i].Group, gwv1.GroupName)
	}
	if tls != nil {
		setDefault(&tls.Mode, gwv1.TLSModeTerminate)
		for i := range tls.CertificateRefs {
			defaultSecretRef(&tls.CertificateRefs[i])
		}
	}
}

func defaultSecretRef(r *gwv1.SecretObjectReference) {
	setDefault(&r.Group, "")
	setDefault(&r.Kind, "Secret")
}

func defaultParentRefs(refs []gwv1.ParentReference) {
	for i := range refs {
		setDefault(&refs[i].Group, gwv1.GroupName)
		setDefault(&refs[i].Kind, "Gateway")
	}
}

func defaultBackendObjectRef(r *gwv1.BackendObjectReference) {
	setDefault(&r.Group, "")
	setDefault(&r.Kind, "Service")
}

func defaultBackendRef(r *gwv1.BackendRef) {
	defaultBackendObjectRef(&r.BackendObjectReference)
	setDefault(&r.Weight, 1)
}

func defaultSessionPersistence(sp *gwv1.SessionPersistence) {
	if sp == nil {
		return
	}
	setDefault(&sp.Type, gwv1.CookieBasedSessionPersistence)
	if sp.Cookie != nil {
		setDefault(&sp.Cookie.Path, "/")
		setDefault(&sp.Cookie.LifetimeType, gwv1.SessionCookieLifetimeType)
	}
}

func defaultMirror(m *gwv1.HTTPRequestMirrorFilter) {
	if m == nil {
		return
	}
	defaultBackendObjectRef(&m.BackendRef)
	if m.Fraction != nil {
		setDefault(&m.Fraction.Denominator, 100)
	}
}

func defaultHTTPRoute(r *gwv1.HTTPRoute) {
	defaultParentRefs(r.Spec.ParentRefs)
	if len(r.Spec.Rules) == 0 {
		r.Spec.Rules = []gwv1.HTTPRouteRule{{}}
	}
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		if len(rule.Matches) == 0 {
			rule.Matches = []gwv1.HTTPRouteMatch{{}}
		}
		for j := range rule.Matches {
			m := &rule.Matches[j]
			setDefault(&m.Path, gwv1.HTTPPathMatch{})
			setDefault(&m.Path.Type, gwv1.PathMatchPathPrefix)
			setDefault(&m.Path.Value, "/")
			for k := range m.Headers {
				setDefault(&m.Headers[k].Type, gwv1.HeaderMatchExact)
			}
			for k := range m.QueryParams {
				setDefault(&m.QueryParams[k].Type, gwv1.QueryParamMatchExact)
			}
		}
		defaultHTTPFilters(rule.Filters)
		for j := range rule.BackendRefs {
			defaultBackendRef(&rule.BackendRefs[j].BackendRef)
			defaultHTTPFilters(rule.BackendRefs[j].Filters)
		}
		//lint:ignore SA1019 route-inline session persistence is deprecated (GEP-4894) but still in the API: served until it is removed
		defaultSessionPersistence(rule.SessionPersistence)
		if rule.Retry != nil {
			setDefault(&rule.Retry.Attempts, 1)
		}
	}
	r.Status = gwv1.HTTPRouteStatus{}
}

func defaultHTTPFilters(fs []gwv1.HTTPRouteFilter) {
	for i := range fs {
		f := &fs[i]
		defaultMirror(f.RequestMirror)
		if f.RequestRedirect != nil {
			setDefault(&f.RequestRedirect.StatusCode, 302)
		}
		// maxAge has no pointer to tell unset from 0, and 0 fails the
		// CRD's minimum of 1, so 0 can only mean unset.
		if f.CORS != nil && f.CORS.MaxAge == 0 {
			f.CORS.MaxAge = 5
		}
		if f.ExternalAuth != nil {
			defaultBackendObjectRef(&f.ExternalAuth.BackendRef)
		}
	}
}

func defaultGRPCRoute(r *gwv1.GRPCRoute) {
	defaultParentRefs(r.Spec.ParentRefs)
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		for j := range rule.Matches {
			m := &rule.Matches[j]
			if m.Method != nil {
				setDefault(&m.Method.Type, gwv1.GRPCMethodMatchExact)
			}
			for k := range m.Headers {
				setDefault(&m.Headers[k].Type, gwv1.GRPCHeaderMatchExact)
			}
		}
		defaultGRPCFilters(rule.Filters)
		for j := range rule.BackendRefs {
			defaultBackendRef(&rule.BackendRefs[j].BackendRef)
			defaultGRPCFilters(rule.BackendRefs[j].Filters)
		}
		//lint:ignore SA1019 route-inline session persistence is deprecated (GEP-4894) but still in the API: served until it is removed
		defaultSessionPersistence(rule.SessionPersistence)
	}
	r.Status = gwv1.GRPCRouteStatus{}
}

func defaultTCPRoute(r *gwv1.TCPRoute) {
	defaultParentRefs(r.Spec.ParentRefs)
	for i := range r.Spec.Rules {
		defaultBackendRefs(r.Spec.Rules[i].BackendRefs)
	}
	r.Status = gwv1.TCPRouteStatus{}
}

func defaultTLSRoute(r *gwv1.TLSRoute) {
	defaultParentRefs(r.Spec.ParentRefs)
	for i := range r.Spec.Rules {
		defaultBackendRefs(r.Spec.Rules[i].BackendRefs)
	}
	r.Status = gwv1.TLSRouteStatus{}
}

func defaultBackendRefs(refs []gwv1.BackendRef) {
	for i := range refs {
		defaultBackendRef(&refs[i])
	}
}

func defaultGRPCFilters(fs []gwv1.GRPCRouteFilter) {
	for i := range fs {
		defaultMirror(fs[i].RequestMirror)
	}
}

func defaultBackendTLSPolicy(p *gwv1.BackendTLSPolicy) {
	p.Status = gwv1.PolicyStatus{}
}

func defaultAccessPolicy(p *v1alpha1.AccessPolicy) {
	p.Status = gwv1.PolicyStatus{}
}

// defaultLoadBalancingPolicy clears the status; translation applies the
// spec's defaults itself.
func defaultLoadBalancingPolicy(p *v1alpha1.LoadBalancingPolicy) {
	p.Status = gwv1.PolicyStatus{}
}

// defaultDNSPolicy clears the status and applies the CRD's default.
func defaultDNSPolicy(p *v1alpha1.DNSPolicy) {
	p.Status = gwv1.PolicyStatus{}
	if p.Spec.Records == "" {
		p.Spec.Records = v1alpha1.DefaultDNSRecords
	}
}

// setDefault points *p at a copy of v when *p is nil.
func setDefault[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}

func ptr[T any](v T) *T { return &v }
