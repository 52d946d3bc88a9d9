// This file sets up what is watched.

package controller

import (
	"fmt"
	"slices"
	"sync/atomic"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/internal/gwcompat"
)

// Resources of our CRDs and of the Gateway API CRD whose annotation gives
// the installed bundle version.
var (
	gvrGatewayClassConfigs = v1alpha1.SchemeGroupVersion.WithResource("gatewayclassconfigs")
	gvrGatewayConfigs      = v1alpha1.SchemeGroupVersion.WithResource("gatewayconfigs")
	gvrExternalBackends    = v1alpha1.SchemeGroupVersion.WithResource("externalbackends")
	gvrAccessPolicies      = v1alpha1.SchemeGroupVersion.WithResource("accesspolicies")
	gvrLBPolicies          = v1alpha1.SchemeGroupVersion.WithResource("loadbalancingpolicies")
	gvrDNSPolicies         = v1alpha1.SchemeGroupVersion.WithResource("dnspolicies")
	gvrClusterTrustBundles = certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles")
	gvrCRDs                = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// bundleCRD is the CRD read for the gateway.networking.k8s.io/bundle-version
// annotation: every bundle has GatewayClasses.
const (
	bundleCRD             = "gatewayclasses.gateway.networking.k8s.io"
	bundleVersionAnnotate = "gateway.networking.k8s.io/bundle-version"
)

// watched holds the informers of everything translate reads. A kind whose
// resource the API server does not serve (an older Gateway API bundle
// without ListenerSets, our CRDs not installed) has no informer and reads
// as empty; the controller logs it once at start.
type watched struct {
	kube kubeinformers.SharedInformerFactory
	gw   gwinformers.SharedInformerFactory
	dyn  dynamicinformer.DynamicSharedInformerFactory

	classes, gateways, listenerSets, httpRoutes, grpcRoutes, grants, policies cache.SharedIndexInformer
	tcpRoutes, tlsRoutes                                                      cache.SharedIndexInformer
	services, slices, namespaces, secrets, configMaps, trustBundles           cache.SharedIndexInformer
	classConfigs, gatewayConfigs, externals, accessPolicies, crds             cache.SharedIndexInformer
	lbPolicies, dnsPolicies                                                   cache.SharedIndexInformer

	missing []string // resources not served, for the log

	// deleted is set by every delete: an object deleted and made again
	// under the same name, between two syncs or not, has an empty status
	// that the last written output cannot tell apart from the old one's.
	deleted atomic.Bool
}

// newWatched makes the informers; onChange is called on every add, update
// and delete (updates that change nothing, as resyncs deliver, excepted).
func newWatched(kube kubernetes.Interface, gw gwclient.Interface, dyn dynamic.Interface, onChange func()) (*watched, error) {
	w := &watched{
		kube: kubeinformers.NewSharedInformerFactory(kube, 0),
		gw:   gwinformers.NewSharedInformerFactory(gw, 0),
		dyn:  dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
	}
	served, err := servedResources(kube.Discovery())
	if err != nil {
		return nil, err
	}
	has := func(gvr schema.GroupVersionResource) bool {
		if served[gvr] {
			return true
		}
		w.missing = append(w.missing, gvr.Resource+"."+gvr.Group+"/"+gvr.Version)
		return false
	}
	g := w.gw.Gateway().V1()
	gwGV := schema.GroupVersion(gwv1.GroupVersion)
	if has(gwGV.WithResource("gatewayclasses")) {
		w.classes = g.GatewayClasses().Informer()
	}
	if has(gwGV.WithResource("gateways")) {
		w.gateways = g.Gateways().Informer()
	}
	if has(gwGV.WithResource("listenersets")) {
		w.listenerSets = g.ListenerSets().Informer()
	}
	// Routes are listed untyped, so that session persistence stored in
	// Gateway API v1.6's shape by v1.6 CRDs is read (route, below).
	if gvr := gwGV.WithResource("httproutes"); has(gvr) {
		w.httpRoutes = w.dyn.ForResource(gvr).Informer()
	}
	if gvr := gwGV.WithResource("grpcroutes"); has(gvr) {
		w.grpcRoutes = w.dyn.ForResource(gvr).Informer()
	}
	// TCPRoutes and TLSRoutes are new in v1.7's standard channel, so no
	// older shape is stored: they are listed typed.
	if has(gwGV.WithResource("tcproutes")) {
		w.tcpRoutes = g.TCPRoutes().Informer()
	}
	if has(gwGV.WithResource("tlsroutes")) {
		w.tlsRoutes = g.TLSRoutes().Informer()
	}
	if has(gwGV.WithResource("referencegrants")) {
		w.grants = g.ReferenceGrants().Informer()
	}
	if has(gwGV.WithResource("backendtlspolicies")) {
		w.policies = g.BackendTLSPolicies().Informer()
	}
	w.services = w.kube.Core().V1().Services().Informer()
	w.slices = w.kube.Discovery().V1().EndpointSlices().Informer()
	w.namespaces = w.kube.Core().V1().Namespaces().Informer()
	w.secrets = w.kube.Core().V1().Secrets().Informer()
	w.configMaps = w.kube.Core().V1().ConfigMaps().Informer()
	// ClusterTrustBundles are served from Kubernetes 1.37 on (GA; beta,
	// off by default, before): without them a reference to one does not
	// resolve.
	if has(gvrClusterTrustBundles) {
		w.trustBundles = w.kube.Certificates().V1().ClusterTrustBundles().Informer()
	}
	if has(gvrGatewayClassConfigs) {
		w.classConfigs = w.dyn.ForResource(gvrGatewayClassConfigs).Informer()
	}
	if has(gvrGatewayConfigs) {
		w.gatewayConfigs = w.dyn.ForResource(gvrGatewayConfigs).Informer()
	}
	if has(gvrExternalBackends) {
		w.externals = w.dyn.ForResource(gvrExternalBackends).Informer()
	}
	if has(gvrAccessPolicies) {
		w.accessPolicies = w.dyn.ForResource(gvrAccessPolicies).Informer()
	}
	if has(gvrLBPolicies) {
		w.lbPolicies = w.dyn.ForResource(gvrLBPolicies).Informer()
	}
	if has(gvrDNSPolicies) {
		w.dnsPolicies = w.dyn.ForResource(gvrDNSPolicies).Informer()
	}
	// One CRD only, for its bundle-version annotation.
	w.crds = dynamicinformer.NewFilteredDynamicInformer(dyn, gvrCRDs, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", bundleCRD).String()
		}).Informer()

	handler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { onChange() },
		UpdateFunc: func(old, now any) {
			if a, b := accessor(old), accessor(now); a != nil && b != nil && a.GetResourceVersion() == b.GetResourceVersion() {
				return // a resync: nothing changed
			}
			onChange()
		},
		DeleteFunc: func(any) { w.deleted.Store(true); onChange() },
	}
	for _, inf := range w.all() {
		transform := slim
		// Our CRDs are listed as unstructured objects: converted once
		// here, when they change, instead of at every translation.
		// translate's Cache tells them by UID and resourceVersion, which
		// the conversion keeps.
		switch inf {
		case w.classConfigs:
			transform = typed(func() metav1.Object { return &v1alpha1.GatewayClassConfig{} })
		case w.gatewayConfigs:
			transform = typed(func() metav1.Object { return &v1alpha1.GatewayConfig{} })
		case w.externals:
			transform = typed(func() metav1.Object { return &v1alpha1.ExternalBackend{} })
		case w.accessPolicies:
			transform = typed(func() metav1.Object { return &v1alpha1.AccessPolicy{} })
		case w.lbPolicies:
			transform = typed(func() metav1.Object { return &v1alpha1.LoadBalancingPolicy{} })
		case w.dnsPolicies:
			transform = typed(func() metav1.Object { return &v1alpha1.DNSPolicy{} })
		case w.httpRoutes:
			transform = route(func() metav1.Object { return &gwv1.HTTPRoute{} })
		case w.grpcRoutes:
			transform = route(func() metav1.Object { return &gwv1.GRPCRoute{} })
		}
		if err := inf.SetTransform(transform); err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func accessor(o any) metav1.Object {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	a, err := meta.Accessor(o)
	if err != nil {
		return nil
	}
	return a
}

// all lists the informers that exist.
func (w *watched) all() []cache.SharedIndexInformer {
	list := []cache.SharedIndexInformer{w.classes, w.gateways, w.listenerSets, w.httpRoutes, w.grpcRoutes, w.tcpRoutes, w.tlsRoutes, w.grants, w.policies,
		w.services, w.slices, w.namespaces, w.secrets, w.configMaps, w.trustBundles, w.classConfigs, w.gatewayConfigs, w.externals, w.accessPolicies, w.lbPolicies, w.dnsPolicies, w.crds}
	return slices.DeleteFunc(list, func(i cache.SharedIndexInformer) bool { return i == nil })
}

// synced lists the informers' HasSynced, for cache.WaitForCacheSync.
func (w *watched) synced() []cache.InformerSynced {
	var out []cache.InformerSynced
	for _, i := range w.all() {
		out = append(out, i.HasSynced)
	}
	return out
}

// start runs every informer until stop is closed.
func (w *watched) start(stop <-chan struct{}) {
	for _, i := range w.all() {
		go i.Run(stop)
	}
}

// servedResources asks discovery which of the groups we watch are served.
// A group that is not installed at all is not an error.
func servedResources(d discovery.DiscoveryInterface) (map[schema.GroupVersionResource]bool, error) {
	served := map[schema.GroupVersionResource]bool{}
	for _, gv := range []schema.GroupVersion{schema.GroupVersion(gwv1.GroupVersion), v1alpha1.SchemeGroupVersion, certificatesv1.SchemeGroupVersion} {
		list, err := d.ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("discovering %s: %w", gv, err)
		}
		for _, r := range list.APIResources {
			served[gv.WithResource(r.Name)] = true
		}
	}
	return served, nil
}

// slim drops what translate never reads and the cache would otherwise
// keep for every object: managed fields, the last-applied annotation, and
// the data of Secrets that cannot be certificates or credentials (Helm
// keeps whole releases in Secrets).
func slim(o any) (any, error) {
	if a, err := meta.Accessor(o); err == nil {
		a.SetManagedFields(nil)
		if ann := a.GetAnnotations(); ann[corev1.LastAppliedConfigAnnotation] != "" {
			delete(ann, corev1.LastAppliedConfigAnnotation)
		}
	}
	if s, ok := o.(*corev1.Secret); ok && s.Type != corev1.SecretTypeTLS && s.Type != corev1.SecretTypeOpaque {
		s.Data, s.StringData = nil, nil
	}
	return o, nil
}

// typed converts an unstructured object of our CRDs to its Go type. An
// object that does not convert (the CRD's schema should prevent it) keeps
// its name and an empty spec, which translate reports as invalid where it
// is used: an error here would stop the informer.
func typed(newObj func() metav1.Object) cache.TransformFunc {
	return func(o any) (any, error) {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return o, nil // a DeletedFinalStateUnknown, or already typed
		}
		u.SetManagedFields(nil)
		out := newObj()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			out = newObj()
			out.SetNamespace(u.GetNamespace())
			out.SetName(u.GetName())
			out.SetUID(u.GetUID())
			out.SetResourceVersion(u.GetResourceVersion())
			out.SetGeneration(u.GetGeneration())
			out.SetCreationTimestamp(u.GetCreationTimestamp())
		}
		return out, nil
	}
}

// route converts an untyped HTTPRoute or GRPCRoute to its Go type after
// rewriting what Gateway API v1.6 CRDs store in the shape v1.7 changed
// (gwcompat.Route: session persistence), which the v1.7 Go types would
// drop.
func route(newObj func() metav1.Object) cache.TransformFunc {
	conv := typed(newObj)
	return func(o any) (any, error) {
		if u, ok := o.(*unstructured.Unstructured); ok {
			gwcompat.Route(u.Object)
		}
		return conv(o)
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
