// This file implements the lookup, the translation's only way to the
// snapshot's objects.

package translate

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// lookup is how a translation reads the snapshot's objects by name: the
// translator has no other way to them. It exists so that a Cache can
// reuse a route's translation knowing everything the translation read.
// Each read is accounted for in one of three ways, and a new kind of read
// must choose one:
//
//   - recorded: backend reads (Services, EndpointSlices, ExternalBackends)
//     go into the log of the route being translated, with the objects
//     they found, and the Cache compares them before reusing the
//     translation (routememo.go) or to find the routes a change affects
//     (patch.go);
//   - noted: a route that asked whether a ReferenceGrant allows a
//     reference, or met a backend a BackendTLSPolicy targets, says so in
//     its log, and the Cache does not reuse its translation once grants,
//     or policies of its backends, changed (epochChange);
//   - in the epoch: ConfigMaps, ClusterTrustBundles, Secrets,
//     Namespaces, GatewayClassConfigs and GatewayConfigs are few and
//     rarely change, and what a route's translation takes of them comes
//     to it through its Gateway (gatewayFacts) or a BackendTLSPolicy;
//     they are compared as a set (the Cache's epoch, cache.go).
//
// Without a Cache, log is nil and reads record nothing.
type lookup struct {
	ix  *index
	log *readLog
}

// readLog is what one route's translation read that decides whether it
// can be reused.
type readLog struct {
	// backends are what its backendRefs (and mirrors) resolved through,
	// once per backendKey, in the order first met.
	backends []backendDep
	// policies is set when a BackendTLSPolicy targets one of them: the
	// policy's ancestors are noted per translation, so a translation that
	// met one cannot be reused.
	policies bool
	// grants is set when it asked whether a ReferenceGrant allows a
	// reference to another namespace.
	grants bool
}

// backendObjects are the objects one backend resolves through: a Service
// and its EndpointSlices, a ServiceImport's EndpointSlices, or an
// ExternalBackend.
type backendObjects struct {
	svc    *corev1.Service
	slices []*discoveryv1.EndpointSlice
	ext    *v1alpha1.ExternalBackend
}

// backendDep is a recorded backend read: the backend (as a cluster: the
// Cache also lists the clusters a route met, in order) and the keys of
// what it found.
type backendDep struct {
	backendKey
	found backendKeys
}

// backendKeys are the stamps of a backend's objects, taken when they
// were read: the Cache compares them with the stamps of the objects found
// by the same name later. A stamp is UID and resourceVersion, which stand
// for the object's key (objKey) as in a keySet; its name is the
// backend's.
type backendKeys struct {
	obj    stamp // the Service or ExternalBackend; zero when none
	slices []stamp
	// unstamped: an object found had no stamp; it is never the same.
	unstamped bool
}

// stamp is an object's UID and resourceVersion.
type stamp struct {
	uid types.UID
	rv  string
}

func stampOf(o metav1.Object) stamp { return stamp{o.GetUID(), o.GetResourceVersion()} }

// stamped reports whether s has a UID and a resourceVersion.
func (s stamp) stamped() bool { return s.uid != "" && s.rv != "" }

// objStamp is the stamp of a backend's Service or ExternalBackend, and
// whether it has one of them.
func (objs *backendObjects) objStamp() (stamp, bool) {
	switch {
	case objs.svc != nil:
		return stampOf(objs.svc), true
	case objs.ext != nil:
		return stampOf(objs.ext), true
	}
	return stamp{}, false
}

func keysOf(objs backendObjects) backendKeys {
	var k backendKeys
	obj, present := objs.objStamp()
	k.obj, k.unstamped = obj, present && !obj.stamped()
	if len(objs.slices) > 0 {
		k.slices = make([]stamp, len(objs.slices))
		for i, s := range objs.slices {
			k.slices[i] = stampOf(s)
			k.unstamped = k.unstamped || !k.slices[i].stamped()
		}
	}
	return k
}

// sameAs reports whether objs are the objects of stamps k: each of the
// same stamp, and stamped.
func (k *backendKeys) sameAs(objs backendObjects) bool {
	obj, present := objs.objStamp()
	if k.unstamped || obj != k.obj || present && !obj.stamped() || len(k.slices) != len(objs.slices) {
		return false
	}
	for i, s := range objs.slices {
		if st := stampOf(s); st != k.slices[i] || !st.stamped() {
			return false
		}
	}
	return true
}

// backend reads the objects the backendRef k names, and the
// BackendTLSPolicies that target it (of a Service or an ExternalBackend).
// Recorded.
func (l lookup) backend(k backendKey) (backendObjects, []*gwv1.BackendTLSPolicy) {
	objs := l.ix.backendObjects(k.kind, k.namespace, k.name)
	var policies []*gwv1.BackendTLSPolicy
	if t, ok := k.policyTarget(); ok {
		policies = l.ix.policies[t]
	}
	if l.log != nil {
		l.log.noteBackend(k, objs)
		l.log.policies = l.log.policies || len(policies) > 0
	}
	return objs, policies
}

// policyTarget is the backend as a BackendTLSPolicy names it, if one may:
// a Service or an ExternalBackend.
func (k backendKey) policyTarget() (policyTarget, bool) {
	switch k.kind {
	case kindService:
		return policyTarget{"", k.kind, k.namespace, k.name}, true
	case v1alpha1.KindExternalBackend:
		return policyTarget{v1alpha1.Group, k.kind, k.namespace, k.name}, true
	}
	return policyTarget{}, false
}

func (r *readLog) noteBackend(k backendKey, objs backendObjects) {
	for _, d := range r.backends {
		if d.backendKey == k {
			return
		}
	}
	r.backends = append(r.backends, backendDep{backendKey: k, found: keysOf(objs)})
}

// backendObjects finds a backend's objects, recording nothing: the Cache
// uses it to compare a recorded read with the present.
func (ix *index) backendObjects(kind, ns, name string) backendObjects {
	key := nn(ns, name)
	switch kind {
	case kindService:
		return backendObjects{svc: ix.services[key], slices: ix.slices[key]}
	case kindServiceImport:
		return backendObjects{slices: ix.mcsSlices[key]}
	default:
		return backendObjects{ext: ix.external[key]}
	}
}

// granted reports whether a ReferenceGrant allows a reference (see
// index.granted). Noted.
func (l lookup) granted(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	if l.log != nil && fromNS != toNS { // within a namespace no grant is asked
		l.log.grants = true
	}
	return l.ix.granted(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName)
}

// configMap returns a ConfigMap, or nil. In the epoch.
func (l lookup) configMap(ns, name string) *corev1.ConfigMap {
	return l.ix.configMaps[nn(ns, name)]
}

// trustBundle returns a ClusterTrustBundle, or nil. In the epoch.
func (l lookup) trustBundle(name string) *certificatesv1.ClusterTrustBundle {
	return l.ix.trustBundles[name]
}

// secret returns a Secret, or nil. In the epoch.
func (l lookup) secret(ns, name string) *corev1.Secret {
	return l.ix.secrets[nn(ns, name)]
}

// classConfig returns a GatewayClassConfig, or nil. In the epoch.
func (l lookup) classConfig(name string) *v1alpha1.GatewayClassConfig {
	return l.ix.classConfig[name]
}

// gatewayConfig returns a GatewayConfig, or nil. In the epoch.
func (l lookup) gatewayConfig(ns, name string) *v1alpha1.GatewayConfig {
	return l.ix.gwConfig[nn(ns, name)]
}

// namespaceLabels returns a namespace's labels. In the epoch.
func (l lookup) namespaceLabels(ns string) labels.Set {
	return l.ix.namespaceLabels(ns)
}
