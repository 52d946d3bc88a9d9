// This file indexes the snapshot's objects, once per translation.

package translate

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// Label keys that tie EndpointSlices to what they serve.
const (
	labelServiceName = discoveryv1.LabelServiceName              // kubernetes.io/service-name
	labelMCSService  = "multicluster.kubernetes.io/service-name" // ServiceImport slices
)

// index holds the snapshot's objects keyed the way translate looks them up,
// built once per translation so every lookup is a map access.
type index struct {
	namespaces   map[string]labels.Set
	services     map[types.NamespacedName]*corev1.Service
	slices       map[types.NamespacedName][]*discoveryv1.EndpointSlice // by Service
	mcsSlices    map[types.NamespacedName][]*discoveryv1.EndpointSlice // by ServiceImport
	secrets      map[types.NamespacedName]*corev1.Secret
	configMaps   map[types.NamespacedName]*corev1.ConfigMap
	trustBundles map[string]*certificatesv1.ClusterTrustBundle
	external     map[types.NamespacedName]*v1alpha1.ExternalBackend
	grants       map[string][]*gwv1.ReferenceGrant // by the grant's (target) namespace
	classConfig  map[string]*v1alpha1.GatewayClassConfig
	gwConfig     map[types.NamespacedName]*v1alpha1.GatewayConfig
	policies     map[policyTarget][]*gwv1.BackendTLSPolicy
}

// policyTarget is what a BackendTLSPolicy's targetRef names.
type policyTarget struct {
	group, kind, namespace, name string
}

func nn(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

func buildIndex(s *Snapshot) *index {
	ix := &index{
		namespaces:   make(map[string]labels.Set, len(s.Namespaces)),
		services:     make(map[types.NamespacedName]*corev1.Service, len(s.Services)),
		slices:       make(map[types.NamespacedName][]*discoveryv1.EndpointSlice, len(s.EndpointSlices)),
		mcsSlices:    map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		secrets:      make(map[types.NamespacedName]*corev1.Secret, len(s.Secrets)),
		configMaps:   make(map[types.NamespacedName]*corev1.ConfigMap, len(s.ConfigMaps)),
		trustBundles: make(map[string]*certificatesv1.ClusterTrustBundle, len(s.ClusterTrustBundles)),
		external:     make(map[types.NamespacedName]*v1alpha1.ExternalBackend, len(s.ExternalBackends)),
		grants:       map[string][]*gwv1.ReferenceGrant{},
		classConfig:  make(map[string]*v1alpha1.GatewayClassConfig, len(s.GatewayClassConfigs)),
		gwConfig:     make(map[types.NamespacedName]*v1alpha1.GatewayConfig, len(s.GatewayConfigs)),
		policies:     map[policyTarget][]*gwv1.BackendTLSPolicy{},
	}
	for _, o := range s.Namespaces {
		ix.namespaces[o.Name] = labels.Set(o.Labels)
	}
	for _, o := range s.Services {
		ix.services[nn(o.Namespace, o.Name)] = o
	}
	for _, o := range s.EndpointSlices {
		if svc := o.Labels[labelServiceName]; svc != "" {
			k := nn(o.Namespace, svc)
			ix.slices[k] = append(ix.slices[k], o)
		}
		if svc := o.Labels[labelMCSService]; svc != "" {
			k := nn(o.Namespace, svc)
			ix.mcsSlices[k] = append(ix.mcsSlices[k], o)
		}
	}
	for _, o := range s.Secrets {
		ix.secrets[nn(o.Namespace, o.Name)] = o
	}
	for _, o := range s.ConfigMaps {
		ix.configMaps[nn(o.Namespace, o.Name)] = o
	}
	for _, o := range s.ClusterTrustBundles {
		ix.trustBundles[o.Name] = o
	}
	for _, o := range s.ExternalBackends {
		ix.external[nn(o.Namespace, o.Name)] = o
	}
	for _, o := range s.ReferenceGrants {
		ix.grants[o.Namespace] = append(ix.grants[o.Namespace], o)
	}
	for _, o := range s.GatewayClassConfigs {
		ix.classConfig[o.Name] = o
	}
	for _, o := range s.GatewayConfigs {
		ix.gwConfig[nn(o.Namespace, o.Name)] = o
	}
	for _, p := range s.BackendTLSPolicies {
		for _, k := range policyTargets(p) {
			ix.policies[k] = append(ix.policies[k], p)
		}
	}
	return ix
}

// policyTargets are the backends a BackendTLSPolicy targets.
func policyTargets(p *gwv1.BackendTLSPolicy) []policyTarget {
	out := make([]policyTarget, len(p.Spec.TargetRefs))
	for i, t := range p.Spec.TargetRefs {
		out[i] = policyTarget{string(t.Group), string(t.Kind), p.Namespace, string(t.Name)}
	}
	return out
}

// namespaceLabels returns a namespace's labels; a namespace missing from the
// snapshot has none.
func (ix *index) namespaceLabels(ns string) labels.Set {
	return ix.namespaces[ns]
}

// granted reports whether a ReferenceGrant in the target's namespace lets
// objects of fromGroup/fromKind in fromNS refer to toGroup/toKind toName.
// References within one namespace need no grant.
func (ix *index) granted(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	if fromNS == toNS {
		return true
	}
	for _, g := range ix.grants[toNS] {
		from := false
		for _, f := range g.Spec.From {
			if string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS {
				from = true
				break
			}
		}
		if !from {
			continue
		}
		for _, t := range g.Spec.To {
			if string(t.Group) == toGroup && string(t.Kind) == toKind && (t.Name == nil || *t.Name == "" || string(*t.Name) == toName) {
				return true
			}
		}
	}
	return false
}
